"""Retries: attempts counted and persisted, errors that never retry, Retry-After."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pytest

from ratchet.records import OpKind, OpStatus, TaskStatus, WaitReason, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.builders import make_op
from .flows import FLOWS, entries
from .support import leave_in_flight, run_until_crash


async def test_a_tool_failing_twice_succeeds_on_its_third_attempt(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"})

    assert task.status is TaskStatus.COMPLETED
    assert task.result == 3
    assert [c["attempt"] for c in entries(ledger, "flaky")] == [1, 2, 3]
    op = await store.get_op(task.id, 0)
    assert op is not None and (op.status, op.attempt, op.next_attempt_at) == (OpStatus.SUCCEEDED, 3, None)
    retries = [e for e in await store.list_events(task.id) if e.kind == "retry"]
    assert [e.data["attempt"] for e in retries] == [1, 2]


async def test_a_failed_attempt_is_persisted_and_a_resume_continues_with_the_next(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(
        rt, "call_one", {"ledger": ledger, "tool_name": "flaky", "args": {"fail_times": 1, "crash_at": 2}}
    )
    op = await store.get_op(task_id, 1)
    assert op is not None and (op.status, op.attempt, op.error_type) == (OpStatus.FAILED, 1, "ValueError")
    assert op.next_attempt_at is not None

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == 2
    assert [c["attempt"] for c in entries(ledger, "flaky")] == [1, 2, 2]
    op = await store.get_op(task_id, 1)
    assert op is not None and op.attempt == 2


async def backoff_left_behind(store: StateStore, rt: Runtime, ledger: str, due_in: float) -> str:
    """A task whose attempt 2 of `patient` failed; attempt 3 is due `due_in` seconds from now."""
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "patient"})
    failed = make_op(
        task_id,
        0,
        OpStatus.FAILED,
        name="patient",
        attempt=2,
        error_type="ValueError",
        input={"ledger": ledger, "label": "patient"},
        next_attempt_at=utcnow() + dt.timedelta(seconds=due_in),
    )
    await leave_in_flight(store, task_id, failed)
    return task_id


async def test_a_resume_after_the_backoff_ended_does_not_wait_again(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await backoff_left_behind(store, rt, ledger, due_in=-1.0)

    started = time.monotonic()
    task = await Runtime(store).resume(task_id)

    assert time.monotonic() - started < 5.0  # the tool's policy would wait 20 s from scratch
    assert task.status is TaskStatus.COMPLETED
    assert task.result == 3
    assert [c["attempt"] for c in entries(ledger, "patient")] == [3]


async def test_a_resume_during_the_backoff_waits_only_for_what_is_left(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await backoff_left_behind(store, rt, ledger, due_in=0.5)

    started = time.monotonic()
    task = await Runtime(store).resume(task_id)
    waited = time.monotonic() - started

    assert 0.4 <= waited < 5.0
    assert task.status is TaskStatus.COMPLETED
    assert [c["attempt"] for c in entries(ledger, "patient")] == [3]


async def test_a_long_backoff_frees_the_worker_with_a_timer_trigger(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "fails_slowly"})

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    op = await store.get_op(task.id, 0)
    assert op is not None and (op.status, op.attempt) == (OpStatus.FAILED, 1)
    wakes = [t for t in await store.list_triggers(task.id) if t.kind == "wake"]
    assert [t.fire_at for t in wakes] == [op.next_attempt_at]
    assert op.next_attempt_at is not None
    assert 50 < (op.next_attempt_at - utcnow()).total_seconds() <= 60


@pytest.mark.parametrize(
    ("tool_name", "error_type"), [("key_error", "KeyError"), ("refuses", "NonRetryableError")]
)
async def test_errors_that_must_not_be_retried_fail_at_once(
    store: StateStore, rt: Runtime, ledger: str, tool_name: str, error_type: str
) -> None:
    task = await rt.run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": tool_name})

    assert task.status is TaskStatus.FAILED
    assert f"{tool_name} (operation 0) failed: {error_type}" in (task.error or "")
    assert len(entries(ledger, tool_name)) == 1
    op = await store.get_op(task.id, 0)
    assert op is not None and (op.status, op.attempt, op.next_attempt_at) == (OpStatus.FAILED, 1, None)


async def test_arguments_that_do_not_fit_the_tool_fail_at_once(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "noop"})

    assert task.status is TaskStatus.FAILED
    assert "noop (operation 0) failed: NonRetryableError: bad arguments for noop" in (task.error or "")
    op = await store.get_op(task.id, 0)
    assert op is not None and op.attempt == 1


async def test_maximum_attempts_exhausted_fails_the_task(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "always_fails"})

    assert task.status is TaskStatus.FAILED
    assert "always_fails (operation 0) failed: ValueError: always_fails always fails" in (task.error or "")
    assert len(entries(ledger, "always_fails")) == 2
    op = await store.get_op(task.id, 0)
    assert op is not None and (op.status, op.attempt, op.next_attempt_at) == (OpStatus.FAILED, 2, None)
    events = await store.list_events(task.id)
    assert events[-1].kind == "task_failed"


async def test_a_rate_limited_model_call_honours_retry_after_and_takes_the_next_entry(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"act": [{"error": {"status": 429, "retry_after": 1}}, {"content": "after the wait"}]})

    started = time.monotonic()
    task = await rt.run(f"{FLOWS}:ask_model", {"count": 1}, model=model)
    waited = time.monotonic() - started

    assert waited >= 0.95  # the workflow's own policy waits 0.01 s
    assert task.status is TaskStatus.COMPLETED
    assert task.result == ["after the wait"]
    op = await store.get_op(task.id, 0)
    assert op is not None and (op.kind, op.attempt, op.meta["ordinal"]) == (OpKind.MODEL, 2, 1)
    retries = [e for e in await store.list_events(task.id) if e.kind == "retry"]
    assert len(retries) == 1
    delay = retries[0].data["delay"]
    assert isinstance(delay, int | float) and delay >= 1

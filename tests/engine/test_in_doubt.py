"""Operations found in flight on resume: rerun, reconcile, or wait for a person."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet.engine import Worker
from ratchet.errors import CannotResume, InputError
from ratchet.records import OpKind, OpStatus, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.builders import make_op
from .flows import FLOWS, entries
from .support import leave_in_flight, run_until_crash


async def crashed(rt: Runtime, ledger: str, tool_name: str) -> str:
    """A task whose first op, `tool_name`, did its effect and then the worker died."""
    return await run_until_crash(rt, "first_call", {"ledger": ledger, "tool_name": tool_name})


async def test_an_idempotent_tool_in_flight_runs_again_with_the_same_key(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "idem"})
    args = {"ledger": ledger, "label": "idem"}
    await leave_in_flight(store, task_id, make_op(task_id, 0, name="idem", input=args))

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert [(c["key"], c["attempt"]) for c in entries(ledger, "idem")] == [(f"{task_id}:0", 2)]
    events = await store.list_events(task_id)
    assert any(e.kind == "in_doubt_rerun" and f"{task_id}:0" in e.message for e in events)


async def test_a_tool_taking_its_key_in_flight_runs_again_with_the_same_key(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(
        rt, "call_one", {"ledger": ledger, "tool_name": "keyed", "args": {"crash_first": True}}
    )
    op = await store.get_op(task_id, 1)
    assert op is not None and op.status is OpStatus.STARTED

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    calls = entries(ledger, "keyed")
    assert [c["key"] for c in calls] == [f"{task_id}:1", f"{task_id}:1"]
    assert [c["attempt"] for c in calls] == [1, 2]
    assert len(entries(ledger, "warmup")) == 1


async def test_reconcile_done_settles_the_call_without_running_it(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await crashed(rt, ledger, "reconcile_done")

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"reconciled": f"{task_id}:0"}
    assert len(entries(ledger, "reconcile_done")) == 1
    op = await store.get_op(task_id, 0)
    assert op is not None and op.status is OpStatus.SUCCEEDED and op.output == {"reconciled": f"{task_id}:0"}


async def test_reconcile_run_again_runs_the_call(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await crashed(rt, ledger, "reconcile_again")

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"ran": "reconcile_again"}
    assert len(entries(ledger, "reconcile_again")) == 2


async def test_reconcile_ask_person_waits_in_doubt(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await crashed(rt, ledger, "reconcile_ask")

    task = await Runtime(store).resume(task_id)

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.IN_DOUBT)
    assert (await store.get_task(task_id)).waiting_on is WaitReason.IN_DOUBT
    assert len(entries(ledger, "reconcile_ask")) == 1


async def test_a_plain_tool_in_flight_waits_for_a_person_and_is_not_run(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await crashed(rt, ledger, "plain_crash")

    task = await Runtime(store).resume(task_id)

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.IN_DOUBT)
    stored = await store.get_task(task_id)
    assert (stored.status, stored.waiting_on) == (TaskStatus.WAITING, WaitReason.IN_DOUBT)
    assert len(entries(ledger, "plain_crash")) == 1
    op = await store.get_op(task_id, 0)
    assert op is not None and op.status is OpStatus.STARTED
    waiting = [e for e in await store.list_events(task_id) if e.kind == "waiting"]
    assert len(waiting) == 1
    assert "plain_crash(" in waiting[0].message
    assert f"ratchet resolve {task_id} --op 0" in waiting[0].message
    with pytest.raises(CannotResume):
        await Runtime(store).resume(task_id)
    assert len(entries(ledger, "plain_crash")) == 1


@pytest.mark.parametrize(
    ("choice", "runs", "result"),
    [
        ({"retry": True}, 2, {"ran": "plain_crash"}),
        ({"skip": True}, 1, None),
        ({"result": {"given": "by a person"}}, 1, {"given": "by a person"}),
    ],
    ids=["retry", "skip", "result"],
)
async def test_resolve_settles_the_in_doubt_call(
    store: StateStore, rt: Runtime, ledger: str, choice: dict[str, Any], runs: int, result: Any
) -> None:
    task_id = await crashed(rt, ledger, "plain_crash")
    await rt.resume(task_id)

    await rt.resolve(task_id, 0, **choice)
    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == result
    assert len(entries(ledger, "plain_crash")) == runs
    op = await store.get_op(task_id, 0)
    assert op is not None and op.status is OpStatus.SUCCEEDED and op.output == result


async def test_a_resolved_task_is_queued_for_a_worker(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await crashed(rt, ledger, "plain_crash")
    await rt.resume(task_id)

    queued = await rt.resolve(task_id, 0, skip=True)
    await Worker(store, poll_interval=0.05).run(until_idle=True)

    assert (queued.status, queued.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED
    assert len(entries(ledger, "plain_crash")) == 1
    resolved = [e for e in await store.list_events(task_id) if e.kind == "resolved"]
    assert len(resolved) == 1 and "skipped" in resolved[0].message


@pytest.mark.parametrize(
    "choice",
    [{}, {"retry": True, "skip": True}, {"skip": True, "result": None}],
    ids=["none", "retry+skip", "skip+result"],
)
async def test_resolve_needs_exactly_one_choice(
    store: StateStore, rt: Runtime, ledger: str, choice: dict[str, Any]
) -> None:
    task_id = await crashed(rt, ledger, "plain_crash")
    await rt.resume(task_id)

    with pytest.raises(InputError):
        await rt.resolve(task_id, 0, **choice)


async def test_resolve_refuses_a_task_not_in_doubt(rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})

    with pytest.raises(InputError):
        await rt.resolve(task.id, 0, retry=True)


async def test_a_model_call_found_in_flight_is_asked_again(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"act": [{"content": "first answer"}, {"content": "second answer"}]})
    task_id = await rt.submit(f"{FLOWS}:ask_model", {"count": 1}, model=model)
    request = {"purpose": "act", "messages": [{"role": "user", "content": "go 0"}]}
    await leave_in_flight(
        store, task_id, make_op(task_id, 0, kind=OpKind.MODEL, name="model:act", input=request)
    )

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == ["first answer"]
    op = await store.get_op(task_id, 0)
    assert op is not None and op.status is OpStatus.SUCCEEDED and op.meta["ordinal"] == 0

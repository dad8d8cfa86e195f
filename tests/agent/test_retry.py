"""`Runtime.retry`: a failed agent task tried again replays what succeeded and runs live from its failed step.

The tools act on the tests' ledger (a SQLite file): every raw call is an
invocation under its idempotency key, so a test counts exactly which side
effects ran, and how often, across the failed task and its retry.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import CannotResume, CannotRetry, Runtime, StepStatus, TaskNotFound, TaskStatus
from ratchet.records import OpStatus
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .support import event_kinds, events_of, make_agent, model_ops, run_agent

STEPS = ("restart X", "ship v1", "ship v2")
UNREACHABLE: dict[str, Any] = {"error": {"status": None}}  # no answer: a connection failure
REFUSED: dict[str, Any] = {"error": {"status": 401}}  # fails at once (not retryable)
ACT = [
    calls(("restart_service", {"service": "X"})),
    say("X restarted"),
    calls(("deploy", {"version": "v1"})),
    say("v1 is live"),
    calls(("deploy", {"version": "v2"})),
    say("v2 is live"),
]


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _script_file(model: str) -> Path:
    return Path(model.removeprefix("scripted:"))


def _rewrite(model: str, content: dict[str, Any]) -> None:
    """The world changed (the provider is back, the service answers): the same model now says this."""
    _script_file(model).write_text(json.dumps(content), encoding="utf-8")


def _effects(ledger: Ledger) -> Counter[tuple[str, str]]:
    """How often each keyed tool ran, by tool and the task its key belongs to."""
    counted: Counter[tuple[str, str]] = Counter()
    for (tool, key), times in ledger.invocations().items():
        counted[(tool, key.rpartition(":")[0])] += times
    return counted


async def _fails_at_step_3(rt: Runtime, model: str) -> str:
    task = await run_agent(rt, make_agent(model, max_step_attempts=1))
    assert task.status is TaskStatus.FAILED, task
    steps = await rt.store.list_steps(task.id)
    assert [s.status for s in steps] == [StepStatus.COMPLETED, StepStatus.COMPLETED, StepStatus.FAILED]
    return task.id


async def test_a_task_whose_model_failed_at_step_3_runs_again_only_from_there(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    model = script({"plan": [plan(*STEPS)], "act": [*ACT[:4], REFUSED], "verify": [verdict(True)] * 3})
    failed = await _fails_at_step_3(rt, model)
    _rewrite(model, {"plan": [plan(*STEPS)], "act": ACT, "verify": [verdict(True)] * 3})

    retry = await rt.retry(failed)
    done = await rt.resume(retry)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert (retry, done.forked_from) == (f"{failed}-retry1", failed)
    # Steps 1 and 2 ran once, in the failed task; step 3's deploy once, in the retry.
    assert _effects(tools_ledger) == Counter(
        {("restart_service", failed): 1, ("deploy", failed): 1, ("deploy", retry): 1}
    )
    assert [s.status for s in await store.list_steps(retry)] == [StepStatus.COMPLETED] * 3
    # The retry asked the model only for step 3 (two act turns and a check): the rest replayed.
    original = await store.list_ops(failed)
    copied = [op for op in await store.list_ops(retry) if op.seq < original[-1].seq]
    assert [(op.seq, op.name, op.output) for op in copied] == [
        (op.seq, op.name, op.output) for op in original[:-1]
    ]
    assert [e.data["retry"] for e in await events_of(store, failed, "retried")] == [retry]
    assert "task_retry" in await event_kinds(store, retry)
    assert (await store.get_task(failed)).status is TaskStatus.FAILED  # the failed attempt stays as it was


async def test_a_step_its_check_failed_is_done_again_from_its_start(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    """The check's verdict is journaled: the retry cuts before the step, so the check is asked again."""
    checks = [verdict(True), verdict(True), verdict(False, "v2 does not answer")]
    model = script({"plan": [plan(*STEPS)], "act": ACT, "verify": checks})
    failed = await _fails_at_step_3(rt, model)
    _rewrite(model, {"plan": [plan(*STEPS)], "act": ACT, "verify": [verdict(True)] * 3})

    retry = await rt.retry(failed)
    done = await rt.resume(retry)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert _effects(tools_ledger) == Counter(
        {("restart_service", failed): 1, ("deploy", failed): 2, ("deploy", retry): 1}
    )
    assert len(await model_ops(store, retry, "verify")) == 3  # two replayed, one asked again


async def test_from_step_starts_at_that_steps_beginning(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    model = script({"plan": [plan(*STEPS)], "act": [*ACT[:4], REFUSED], "verify": [verdict(True)] * 3})
    failed = await _fails_at_step_3(rt, model)
    _rewrite(model, {"plan": [plan(*STEPS)], "act": ACT, "verify": [verdict(True)] * 3})

    retry = await rt.retry(failed, from_step=2, queue=False)
    steps = await store.list_steps(retry)
    assert [s.status for s in steps] == [StepStatus.COMPLETED, StepStatus.CURRENT, StepStatus.PENDING]
    done = await rt.resume(retry)

    assert done.status is TaskStatus.COMPLETED, done.error
    # Step 2 (deploy v1) ran again, under the retry's keys; step 1 did not.
    assert _effects(tools_ledger) == Counter(
        {("restart_service", failed): 1, ("deploy", failed): 1, ("deploy", retry): 2}
    )


async def test_an_unreachable_planner_fails_the_task_after_its_retries_and_a_retry_plans_again(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    model = script({"plan": [UNREACHABLE] * 3})

    task = await run_agent(rt, make_agent(model))

    assert task.status is TaskStatus.FAILED
    assert (task.error or "").startswith("model:plan (operation 0) failed: ModelError")
    [planning] = await model_ops(store, task.id, "plan")
    assert (planning.attempt, planning.status) == (3, OpStatus.FAILED)  # the call's own retries
    assert "plan_invalid" not in await event_kinds(store, task.id)  # not a plan repair

    _rewrite(model, {"plan": [plan("restart X")], "act": ACT[:2], "verify": [verdict(True)]})
    done = await rt.resume(await rt.retry(task.id))

    assert done.status is TaskStatus.COMPLETED, done.error
    assert _effects(tools_ledger) == Counter({("restart_service", done.id): 1})


async def test_a_planning_that_gave_no_valid_plan_is_asked_again(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    model = script({"plan": [{"content": {"goal": "no steps", "steps": []}}] * 3})
    task = await run_agent(rt, make_agent(model))
    assert task.status is TaskStatus.FAILED
    assert "plan_failed" in await event_kinds(store, task.id)

    _rewrite(model, {"plan": [plan("restart X")], "act": ACT[:2], "verify": [verdict(True)]})
    done = await rt.resume(await rt.retry(task.id))

    assert done.status is TaskStatus.COMPLETED, done.error
    assert len(await model_ops(store, done.id, "plan")) == 1  # asked anew, none of the invalid ones replayed


async def test_resuming_a_completed_task_returns_it_as_done(
    rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": [plan("restart X")], "act": ACT[:2], "verify": [verdict(True)]})
    task = await run_agent(rt, make_agent(model))
    assert task.status is TaskStatus.COMPLETED

    again = await rt.resume(task.id)

    assert (again.status, again.result) == (TaskStatus.COMPLETED, task.result)


async def test_what_cannot_be_retried_is_refused_in_one_line(
    rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": [plan(*STEPS)], "act": [*ACT[:4], REFUSED], "verify": [verdict(True)] * 3})
    failed = await _fails_at_step_3(rt, model)
    queued = await rt.submit(make_agent(model), instruction="later")

    with pytest.raises(CannotResume, match=f"ratchet retry {failed}"):
        await rt.resume(failed)
    with pytest.raises(CannotRetry, match="give a step from 1 to 3"):
        await rt.retry(failed, from_step=4)
    with pytest.raises(CannotRetry, match="not failed or cancelled"):
        await rt.retry(queued)
    with pytest.raises(TaskNotFound):
        await rt.retry("nope")
    _rewrite(model, {"plan": [plan(*STEPS)], "act": ACT, "verify": [verdict(True)] * 3})
    done = await rt.resume(await rt.retry(failed, from_step=3))
    assert done.status is TaskStatus.COMPLETED, done.error
    with pytest.raises(CannotRetry, match="completed"):
        await rt.retry(done.id)

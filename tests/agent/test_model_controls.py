"""The model's controls in act turns: skip_step, complete_task, fail_task; journaled, evented, shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Runtime, StepStatus, TaskStatus
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .support import event_kinds, events_of, make_agent, model_ops, run_agent


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """These behaviours on the reference store and on a file store."""
    return str(request.param)


async def test_skip_step_skips_the_current_step_with_its_reason_and_the_next_one_runs(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X", "tell the team")],
                "act": [
                    say("X is healthy"),
                    calls(("skip_step", {"reason": "X is healthy, no restart needed"})),
                    say("team told"),
                ],
                "verify": [verdict(True), verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "team told"
    steps = await store.list_steps(task.id)
    assert [(s.name, s.status) for s in steps] == [
        ("look at X", StepStatus.COMPLETED),
        ("restart X", StepStatus.SKIPPED),
        ("tell the team", StepStatus.COMPLETED),
    ]
    assert steps[1].failure_message == "X is healthy, no restart needed"
    (skipped,) = await events_of(store, task.id, "step_skipped")
    assert skipped.data == {"index": 1}
    assert "restart X" in skipped.message and "no restart needed" in skipped.message
    assert len(await model_ops(store, task.id, "verify")) == 2  # a skipped step is not checked
    third = (await model_ops(store, task.id, "act"))[2]
    assert "2. restart X [skipped]: X is healthy, no restart needed" in third.input["messages"][0]["content"]


async def test_complete_task_ends_the_task_with_its_result_after_the_answers_other_calls(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("ship v2", "look at X", "tell the team")],
                "act": [
                    calls(("deploy", {"version": "v2"}), ("complete_task", {"result": "v2 is live"})),
                ],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "v2 is live"
    assert {tool for tool, _ in tools_ledger.effects()} == {"deploy"}  # ran before the task ended
    steps = await store.list_steps(task.id)
    assert [s.status for s in steps] == [StepStatus.COMPLETED, StepStatus.SKIPPED, StepStatus.SKIPPED]
    assert steps[1].failure_message == "not needed: the agent completed the task"
    (ended,) = await events_of(store, task.id, "task_completed_by_agent")
    assert ended.data == {"index": 0, "result": "v2 is live"}
    assert await model_ops(store, task.id, "verify") == []
    kinds = await event_kinds(store, task.id)
    assert kinds.index("task_completed_by_agent") < kinds.index("task_completed")


async def test_fail_task_fails_the_task_with_its_reason_and_cancels_the_steps_left(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X", "tell the team")],
                "act": [say("X is down"), calls(("fail_task", {"reason": "no access to X's host"}))],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.FAILED
    assert "no access to X's host" in (task.error or "") and "restart X" in (task.error or "")
    steps = await store.list_steps(task.id)
    assert [(s.status, s.failure_message) for s in steps] == [
        (StepStatus.COMPLETED, None),
        (StepStatus.FAILED, "no access to X's host"),
        (StepStatus.CANCELLED, None),
    ]
    (gave_up,) = await events_of(store, task.id, "task_failed_by_agent")
    assert gave_up.data == {"index": 1, "reason": "no access to X's host"}
    kinds = await event_kinds(store, task.id)
    assert kinds.index("task_failed_by_agent") < kinds.index("task_failed")


async def test_a_control_without_its_argument_is_an_error_for_the_model_and_the_step_goes_on(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("restart X", check="")],
                "act": [calls(("skip_step", {})), say("restarted X")],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.status for s in await store.list_steps(task.id)] == [StepStatus.COMPLETED]
    _, second = await model_ops(store, task.id, "act")
    assert second.input["messages"][-1]["content"] == 'error: skip_step needs its reason: {"reason": "..."}'
    assert "step_skipped" not in await event_kinds(store, task.id)


async def test_only_the_first_control_of_an_answer_is_taken(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("restart X", "tell the team")],
                "act": [
                    calls(
                        ("skip_step", {"reason": "not needed"}),
                        ("fail_task", {"reason": "changed my mind"}),
                    ),
                    say("told"),
                ],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.status for s in await store.list_steps(task.id)] == [StepStatus.SKIPPED, StepStatus.COMPLETED]
    replies = [m for m in await store.list_messages(task.id) if m.role == "tool"]
    assert [r.content for r in replies] == [
        "the step is skipped; the next step starts",
        "error: skip_step was taken in this answer; fail_task was not",
    ]

"""A step that fails its check: tried again with the check's feedback, then replanned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratchet import Runtime, StepStatus, TaskStatus
from ratchet.store import StateStore

from ..helpers.scripts import plan, plan_step, say, verdict
from .support import event_kinds, events_of, make_agent, model_ops, run_agent

RETRIED: dict[str, Any] = {
    "plan": [plan("restart X")],
    "act": [say("restarted, I think"), say("restarted and answering")],
    "verify": [verdict(False, "X still times out"), verdict(True, "X answers")],
}


async def test_a_step_failing_its_check_once_passes_on_the_retry(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(RETRIED)))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "restarted and answering"
    (step,) = await store.list_steps(task.id)
    assert step.status is StepStatus.COMPLETED
    kinds = await event_kinds(store, task.id)
    assert kinds.count("step_retry") == 1 and "replanned" not in kinds, kinds
    (retry,) = await events_of(store, task.id, "step_retry")
    assert "X still times out" in retry.message
    assert await model_ops(store, task.id, "replan") == []


async def test_the_checks_feedback_reaches_the_retrys_act_prompt(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(RETRIED)))

    first, retry = await model_ops(store, task.id, "act")
    assert "X still times out" not in str(first.input["messages"])
    user = retry.input["messages"][1]
    assert user["role"] == "user"
    assert user["content"].startswith("do: restart X")
    assert "X still times out" in user["content"]


async def test_a_retried_step_counts_both_attempts(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(RETRIED)))

    (step,) = await store.list_steps(task.id)
    assert step.attempts == 2


REPLANNED: dict[str, Any] = {
    "plan": [plan("look at X", "restart X", "tell the team")],
    "act": [
        say("X is degraded"),
        say("restart refused"),
        say("restart refused again"),
        say("rolled back"),
        say("team told"),
    ],
    "verify": [
        verdict(True, "looked"),
        verdict(False, "X did not restart"),
        verdict(False, "X still did not restart"),
        verdict(True, "rolled back"),
        verdict(True, "told"),
    ],
    "replan": [{"content": {"steps": [plan_step("roll X back"), plan_step("tell the team again")]}}],
}


async def test_a_step_failing_twice_is_replanned_and_completed_steps_stay_as_they_were(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(REPLANNED)))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "team told"
    steps = await store.list_steps(task.id)
    assert [(s.index, s.name, s.status) for s in steps] == [
        (0, "look at X", StepStatus.COMPLETED),
        (1, "restart X", StepStatus.FAILED),  # the failed step's record stays, its reason with it
        (2, "roll X back", StepStatus.COMPLETED),
        (3, "tell the team again", StepStatus.COMPLETED),
    ]
    assert steps[1].failure_message == "X still did not restart" and steps[1].attempts == 2
    first_checkpoint = (await store.list_checkpoints(task.id))[0]
    assert steps[0] == first_checkpoint.steps[0]  # the completed step's record, unchanged by the replan
    assert task.state.plan == ["look at X", "restart X", "roll X back", "tell the team again"]
    (replanned,) = await events_of(store, task.id, "replanned")
    assert "X still did not restart" in replanned.message
    assert "roll X back" in replanned.message


async def test_the_replan_request_names_the_completed_and_the_failed_steps(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(REPLANNED)))

    (replan,) = await model_ops(store, task.id, "replan")
    system = replan.input["messages"][0]["content"]
    assert "Completed steps (kept as they are): look at X" in system
    assert "restart X" in system and "X still did not restart" in system
    assert replan.input["json_output"] is True
    acts = await model_ops(store, task.id, "act")
    assert "step 3 of 4: roll X back" in acts[3].input["messages"][0]["content"]


def _replan_answers(*answers: dict[str, Any]) -> dict[str, Any]:
    return {
        "plan": [plan("look at X", "restart X", "tell the team")],
        "act": [say("looked"), say("no"), say("no again")],
        "verify": [
            verdict(True),
            verdict(False, "X did not restart"),
            verdict(False, "X still did not restart"),
        ],
        "replan": list(answers),
    }


async def test_an_empty_replan_keeps_the_plan_says_so_and_the_task_fails(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(_replan_answers({"content": {"steps": []}}))))

    assert task.status is TaskStatus.FAILED
    assert "restart X" in (task.error or "") and "X still did not restart" in (task.error or "")
    steps = await store.list_steps(task.id)
    assert [(s.name, s.status) for s in steps] == [
        ("look at X", StepStatus.COMPLETED),
        ("restart X", StepStatus.FAILED),
        ("tell the team", StepStatus.CANCELLED),
    ]
    assert steps[1].failure_message == "X still did not restart"
    (rejected,) = await events_of(store, task.id, "replan_rejected")
    assert "stays as it was" in rejected.message and "steps" in rejected.message
    assert task.state.plan == ["look at X", "restart X", "tell the team"]
    assert len(await model_ops(store, task.id, "replan")) == 1
    assert Path(task.workspace or "").is_dir()  # kept on failure, for people to look at


async def test_a_replan_that_is_not_json_keeps_the_plan_and_the_task_fails(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(
        Runtime(store), make_agent(script(_replan_answers({"content": "roll back, probably"})))
    )

    assert task.status is TaskStatus.FAILED
    assert [s.status for s in await store.list_steps(task.id)] == [
        StepStatus.COMPLETED,
        StepStatus.FAILED,
        StepStatus.CANCELLED,
    ]
    assert "replan_rejected" in await event_kinds(store, task.id)
    kinds = await event_kinds(store, task.id)
    assert kinds.index("replan_rejected") < kinds.index("step_failed") < kinds.index("task_failed")


async def test_a_plan_that_keeps_failing_is_replanned_at_most_twice_then_fails(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("restart X")],
                "act": [say("tried")] * 20,
                "verify": [verdict(False, "X is down")] * 20,
                "replan": [{"content": {"steps": [plan_step(f"other way {n}")]}} for n in range(5)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.FAILED
    assert len(await model_ops(store, task.id, "replan")) == 2
    assert len(await model_ops(store, task.id, "act")) == 6  # 2 attempts for each of the 3 plans
    steps = await store.list_steps(task.id)
    assert [(s.name, s.status) for s in steps] == [
        ("restart X", StepStatus.FAILED),
        ("other way 0", StepStatus.FAILED),
        ("other way 1", StepStatus.FAILED),
    ]
    assert [s.failure_message for s in steps] == ["X is down"] * 3

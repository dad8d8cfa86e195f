"""What a model gets wrong is repaired within bounds, then fails the task clearly; never a crash or a hang."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, StepStatus, Task, TaskStatus
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .support import event_kinds, events_of, make_agent, model_ops, run_agent

# --------------------------------------------------------------------------- the plan


@pytest.mark.parametrize(
    ("answers", "why"),
    [
        pytest.param(["Sure! First I will look at X.", "{not json", "[1, 2]"], "JSON", id="not-json"),
        pytest.param([{"goal": "fix X", "steps": []}] * 3, "steps", id="no-steps"),
        pytest.param([{"goal": "fix X"}] * 3, "steps", id="steps-missing"),
        pytest.param([{"steps": [{"description": "unnamed"}]}] * 3, "step_name", id="step-unnamed"),
    ],
)
async def test_a_plan_invalid_three_times_fails_the_task_with_a_placeholder_step(
    store: StateStore, script: Callable[[dict[str, Any]], str], answers: list[Any], why: str
) -> None:
    agent = make_agent(script({"plan": [{"content": answer} for answer in answers]}))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.FAILED
    assert "planning failed" in (task.error or "") and why in (task.error or ""), task.error
    assert len(await model_ops(store, task.id, "plan")) == 3
    assert await model_ops(store, task.id, "act") == []
    (step,) = await store.list_steps(task.id)
    assert step.status is StepStatus.FAILED
    assert why in (step.failure_message or ""), step.failure_message
    assert len(await events_of(store, task.id, "plan_invalid")) == 3
    (failed,) = await events_of(store, task.id, "plan_failed")
    assert failed.severity == "error" and why in failed.message
    assert "task_failed" in await event_kinds(store, task.id)
    assert Path(task.workspace or "").is_dir()


async def test_each_repair_request_carries_the_problem_back_to_the_model(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script({"plan": [{"content": "no plan today"}] * 3}))
    task = await run_agent(Runtime(store), agent)

    first, second, third = await model_ops(store, task.id, "plan")
    # Each repair shows the model its own invalid answer, then what is wrong with it.
    assert len(second.input["messages"]) == len(first.input["messages"]) + 2
    assert len(third.input["messages"]) == len(second.input["messages"]) + 2
    answer, repair = second.input["messages"][-2:]
    assert answer == {"role": "assistant", "content": "no plan today"}
    assert (
        repair["role"] == "user" and "not valid" in repair["content"] and "JSON object" in repair["content"]
    )


async def test_a_plan_fixed_on_the_first_repair_completes(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [{"content": "```\nnot a plan\n```"}, plan("restart X")],
                "act": [say("restarted")],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.name for s in await store.list_steps(task.id)] == ["restart X"]
    assert len(await model_ops(store, task.id, "plan")) == 2
    assert len(await events_of(store, task.id, "plan_invalid")) == 1
    assert await events_of(store, task.id, "plan_failed") == []


async def test_a_plan_in_a_json_code_fence_is_accepted(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    fenced = '```json\n{"goal": "fix X", "steps": [{"step_name": "restart X"}]}\n```'
    agent = make_agent(script({"plan": [{"content": fenced}], "act": [say("restarted")]}))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert len(await model_ops(store, task.id, "plan")) == 1


async def test_a_planner_that_keeps_failing_is_retried_then_repaired(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """A 503 is retried (the retry takes the next entry); the answer after it is a valid plan."""
    agent = make_agent(
        script(
            {
                "plan": [{"error": {"status": 503, "retry_after": 0}}, plan("restart X")],
                "act": [say("restarted")],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    (op,) = await model_ops(store, task.id, "plan")
    assert op.attempt == 2 and op.meta["ordinal"] == 1


# --------------------------------------------------------------------------- tool calls


async def _second_act_input(store: StateStore, task_id: str) -> list[dict[str, Any]]:
    return list((await model_ops(store, task_id, "act"))[1].input["messages"])


async def test_an_unknown_tool_is_fed_back_and_the_model_recovers(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X")],
                "act": [
                    calls(("check_health", {"service": "X"})),
                    calls(("check_status", {"service": "X"})),
                    say("degraded"),
                ],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    reply = (await _second_act_input(store, task.id))[-1]
    assert reply["role"] == "tool" and reply["name"] == "check_health"
    assert "no tool named 'check_health'" in reply["content"] and "check_status" in reply["content"]
    assert "check_health" not in {op.name for op in await store.list_ops(task.id)}
    assert tools_ledger.invocations() == {("check_status", "X"): 1}


async def test_arguments_that_do_not_fit_the_schema_are_fed_back_and_the_model_recovers(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X")],
                "act": [
                    calls(("check_status", {"svc": 7})),
                    calls(("check_status", {"service": "X"})),
                    say("degraded"),
                ],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    reply = (await _second_act_input(store, task.id))[-1]
    assert reply["role"] == "tool" and reply["content"].startswith("error:")
    assert "bad arguments for check_status" in reply["content"] and "service" in reply["content"]
    bad = next(op for op in await store.list_ops(task.id) if op.name == "check_status")
    assert bad.status == "failed" and bad.attempt == 1  # not retried: it would fail the same way
    assert tools_ledger.invocations() == {("check_status", "X"): 1}


async def test_a_tool_error_is_fed_back_and_the_model_recovers(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("probe X")],
                "act": [calls(("flaky_probe", {"service": "X"})), say("the probe is refused; X is down")],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    reply = (await _second_act_input(store, task.id))[-1]
    assert "NonRetryableError" in reply["content"] and "connection reset" in reply["content"]


async def test_a_path_outside_the_workspace_is_refused_and_fed_back(
    store: StateStore, script: Callable[[dict[str, Any]], str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    agent = make_agent(
        script(
            {
                "plan": [plan("write notes")],
                "act": [
                    calls(
                        ("write_file", {"path": "../../../outside.txt", "content": "escaped"}),
                        ("read_file", {"path": str(outside)}),
                    ),
                    say("could not"),
                ],
                "verify": [verdict(True)],
            }
        )
    )
    outside.write_text("secret")
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    write_reply, read_reply = (await _second_act_input(store, task.id))[-2:]
    assert "outside the task's workspace" in write_reply["content"]
    assert "outside the task's workspace" in read_reply["content"]
    assert outside.read_text() == "secret"
    assert not (tmp_path / "home" / "outside.txt").exists()


async def _run_out_of_turns(store: StateStore, script: Callable[[dict[str, Any]], str]) -> Task:
    """A task whose first step asks for tool calls turn after turn, with 3 turns allowed a step."""
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X")],
                "act": [calls(("check_status", {"service": "X"}))] * 50,
            }
        ),
        max_turns_per_step=3,
    )
    return await run_agent(Runtime(store), agent)


async def test_an_act_that_never_stops_calling_tools_fails_its_step_after_max_turns(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run_out_of_turns(store, script)

    assert task.status is TaskStatus.FAILED
    assert "3 turns" in (task.error or ""), task.error
    assert len(await model_ops(store, task.id, "act")) == 3
    assert await model_ops(store, task.id, "verify") == []


async def test_a_step_out_of_turns_is_recorded_as_failed(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run_out_of_turns(store, script)

    steps = await store.list_steps(task.id)
    assert [s.status for s in steps] == [StepStatus.FAILED, StepStatus.CANCELLED]
    assert "3 turns" in (steps[0].failure_message or "")
    assert "step_failed" in await event_kinds(store, task.id)


async def test_a_verdict_that_is_not_json_counts_as_a_failed_check(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("restart X")],
                "act": [say("restarted"), say("restarted again")],
                "verify": [{"content": "looks fine to me"}, verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    (retry,) = await events_of(store, task.id, "step_retry")
    assert "no verdict" in retry.message


async def test_a_step_without_a_check_is_not_verified(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script({"plan": [plan("restart X", check="")], "act": [say("restarted")]}))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert await model_ops(store, task.id, "verify") == []

"""An answer asking for more tool calls than the agent allows runs none: the model is told and asked again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ratchet import Runtime, StepStatus, TaskStatus
from ratchet.limits import MAX_TOOL_CALLS_PER_ANSWER
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .support import events_of, make_agent, model_ops, run_agent

FLOOD = 10_000


def _flood(count: int = FLOOD) -> dict[str, Any]:
    return calls(*[("check_status", {"service": f"s{i}"}) for i in range(count)])


async def _tool_ops(store: StateStore, task_id: str) -> list[Any]:
    return [op for op in await store.list_ops(task_id) if op.kind == "tool"]


async def test_an_answer_with_ten_thousand_tool_calls_runs_none_and_the_model_is_asked_again(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    model = script(
        {
            "plan": [plan("look at X")],
            "act": [_flood(), calls(("check_status", {"service": "X"})), say("X is degraded")],
            "verify": [verdict(True)],
        }
    )
    task = await run_agent(Runtime(store), make_agent(model))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert tools_ledger.invocations() == {("check_status", "X"): 1}  # none of the 10,000 ran
    assert [op.input["service"] for op in await _tool_ops(store, task.id)] == ["X"]
    (refused,) = await events_of(store, task.id, "tool_calls_refused")
    assert refused.severity == "warning"
    assert refused.data == {"asked": FLOOD, "limit": MAX_TOOL_CALLS_PER_ANSWER}
    assert f"{FLOOD} tool calls" in refused.message and str(MAX_TOOL_CALLS_PER_ANSWER) in refused.message
    told = (await model_ops(store, task.id, "act"))[1].input["messages"]
    assert told[-1]["role"] == "user"
    assert f"{FLOOD} tool calls" in told[-1]["content"] and "none of them ran" in told[-1]["content"]
    assert "tool_calls" not in told[-2]  # the refused calls are not in the history: none was answered
    kept = await store.list_messages(task.id)
    assert any(m.role == "user" and "none of them ran" in str(m.content) for m in kept)


async def test_the_limit_is_the_agents_setting(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    three = calls(*[("check_status", {"service": name}) for name in ("a", "b", "c")])
    model = script(
        {
            "plan": [plan("look at X")],
            "act": [three, calls(("check_status", {"service": "a"})), say("done")],
            "verify": [verdict(True)],
        }
    )
    task = await run_agent(Runtime(store), make_agent(model, max_tool_calls_per_answer=2))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert tools_ledger.invocations() == {("check_status", "a"): 1}
    (refused,) = await events_of(store, task.id, "tool_calls_refused")
    assert refused.data == {"asked": 3, "limit": 2}


async def test_a_model_that_keeps_asking_for_too_many_fails_the_step_after_its_turns(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    turns = 3
    model = script({"plan": [plan("look at X")], "act": [_flood(100) for _ in range(turns)]})
    task = await run_agent(Runtime(store), make_agent(model, max_turns_per_step=turns))

    assert task.status is TaskStatus.FAILED
    assert f"used its {turns} turns without finishing" in (task.error or ""), task.error
    assert tools_ledger.invocations() == {}
    assert await _tool_ops(store, task.id) == []
    assert len(await model_ops(store, task.id, "act")) == turns
    assert len(await events_of(store, task.id, "tool_calls_refused")) == turns
    (step,) = await store.list_steps(task.id)
    assert step.status is StepStatus.FAILED


async def test_a_resumed_task_refuses_the_same_answer_again_without_running_it(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    model = script(
        {
            "plan": [plan("look at X")],
            "act": [_flood(200), say("nothing to do")],
            "verify": [verdict(True)],
        }
    )
    rt = Runtime(store)
    task = await run_agent(rt, make_agent(model))
    assert task.status is TaskStatus.COMPLETED, task.error
    forked = await rt.fork(task.id, 1)

    again = await rt.resume(forked)

    assert again.status is TaskStatus.COMPLETED, again.error
    assert again.result == task.result
    assert tools_ledger.invocations() == {}
    assert await events_of(store, forked, "tool_calls_refused") == []  # replayed, not written twice

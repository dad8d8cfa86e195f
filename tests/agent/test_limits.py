"""Budgets and deadlines stop an agent task with a reason; its workspace stays for people."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratchet import Budget, Runtime, StepStatus, TaskStatus
from ratchet.store import StateStore

from ..helpers.scripts import plan, say, verdict
from .support import event_kinds, events_of, make_agent, model_ops, run_agent

USAGE = {"prompt_tokens": 60, "completion_tokens": 40}


def _three_steps(**act_entry: Any) -> dict[str, Any]:
    return {
        "plan": [{**plan("look at X", "restart X", "tell the team"), "usage": USAGE}],
        "act": [{**say("done"), **act_entry, "usage": USAGE} for _ in range(3)],
        "verify": [{**verdict(True), "usage": USAGE} for _ in range(3)],
    }


async def _assert_failed_and_left_for_people(store: StateStore, task_id: str, reason: str) -> None:
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.FAILED
    assert reason in (task.error or ""), task.error
    (failed,) = await events_of(store, task_id, "task_failed")
    assert reason in failed.message
    assert Path(task.workspace or "").is_dir(), "the workspace of a failed task is kept"


async def test_max_steps_stops_the_task_before_the_step_past_the_limit(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script(_three_steps()), budget=Budget(max_steps=2))
    task = await run_agent(Runtime(store), agent)

    await _assert_failed_and_left_for_people(store, task.id, "max_steps")
    assert "budget exceeded" in (task.error or "")
    assert len(await model_ops(store, task.id, "act")) == 2
    assert (await event_kinds(store, task.id)).count("step_started") == 2


async def test_max_llm_tokens_stops_the_task_naming_the_limit(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script(_three_steps()), budget=Budget(max_llm_tokens=450))
    task = await run_agent(Runtime(store), agent)

    await _assert_failed_and_left_for_people(store, task.id, "max_llm_tokens")
    ops = [op for op in await store.list_ops(task.id) if op.kind == "model"]
    assert len(ops) == 5  # 5 x 100 tokens: the fifth answer passes 450
    assert "budget_pressure" in task.state.risk_flags
    assert "budget_pressure" in await event_kinds(store, task.id)


async def test_a_passed_deadline_stops_a_slow_model_call(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script(_three_steps(delay=5)))
    started = dt.datetime.now(dt.UTC)
    task = await run_agent(Runtime(store), agent, deadline=0.5)

    assert (dt.datetime.now(dt.UTC) - started).total_seconds() < 4
    await _assert_failed_and_left_for_people(store, task.id, "deadline exceeded")


async def test_no_step_is_left_current_when_a_limit_stops_the_task(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """A task that ended has no current step (exactly one is current *while it runs*)."""
    agent = make_agent(script(_three_steps()), budget=Budget(max_llm_tokens=450))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.FAILED
    statuses = [s.status for s in await store.list_steps(task.id)]
    assert StepStatus.CURRENT not in statuses, statuses
    assert statuses[0] is StepStatus.COMPLETED
    assert statuses[1:] == [StepStatus.FAILED, StepStatus.CANCELLED], statuses

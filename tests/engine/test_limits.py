"""Deadlines and budgets: the task stops with a clear reason and an event."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ratchet.policy import Budget
from ratchet.records import OpStatus, StepStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS, entries


async def failure_event(store: StateStore, task_id: str) -> str:
    events = await store.list_events(task_id)
    assert events[-1].kind == "task_failed"
    return events[-1].message


async def test_the_task_deadline_stops_a_slow_tool(store: StateStore, rt: Runtime, ledger: str) -> None:
    started = time.monotonic()
    task = await rt.run(f"{FLOWS}:slow_calls", {"ledger": ledger, "seconds": 3.0}, deadline=0.5)

    assert time.monotonic() - started < 2.5
    assert task.status is TaskStatus.FAILED
    assert "deadline" in (task.error or "")
    assert "deadline" in await failure_event(store, task.id)
    assert entries(ledger) == []
    assert (await store.get_task(task.id)).deadline == task.deadline is not None


async def test_a_task_past_its_deadline_does_not_start_work(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:slow_calls", {"ledger": ledger, "seconds": 0.0}, deadline=0.05)
    await asyncio.sleep(0.1)

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.FAILED
    assert "deadline" in (task.error or "")
    assert entries(ledger) == []


async def test_a_step_timeout_fails_the_step_and_the_task(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    started = time.monotonic()
    task = await rt.run(
        f"{FLOWS}:stepped", {"ledger": ledger, "steps": 2, "step_timeout": 0.2, "seconds": 3.0}
    )

    assert time.monotonic() - started < 2.5
    assert task.status is TaskStatus.FAILED
    assert "timed out" in (task.error or "")
    steps = await store.list_steps(task.id)
    assert [s.status for s in steps] == [StepStatus.FAILED]
    assert "timed out" in (steps[0].failure_message or "")
    assert "timed out" in await failure_event(store, task.id)
    assert any(e.kind == "step_failed" and "timed out" in e.message for e in await store.list_events(task.id))


async def test_a_tool_timeout_fails_the_call_and_the_task(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    started = time.monotonic()
    task = await rt.run(
        f"{FLOWS}:slow_calls", {"ledger": ledger, "tool_name": "slow_with_timeout", "seconds": 3.0}
    )

    assert time.monotonic() - started < 2.5
    assert task.status is TaskStatus.FAILED
    assert "timed out" in (task.error or "")
    op = await store.get_op(task.id, 0)
    assert op is not None and op.status is OpStatus.FAILED and "timed out" in (op.error or "")
    assert "timed out" in await failure_event(store, task.id)
    assert entries(ledger) == []


async def test_max_steps_stops_the_task_naming_the_limit_and_the_figure(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 3}, budget=Budget(max_steps=2))

    assert task.status is TaskStatus.FAILED
    assert "budget exceeded (max_steps: 3 of 2)" in (task.error or "")
    assert "budget exceeded" in await failure_event(store, task.id)
    assert [len(entries(ledger, f"s{i}")) for i in range(3)] == [1, 1, 0]
    assert [s.status for s in await store.list_steps(task.id)] == [StepStatus.COMPLETED] * 2


async def test_budget_pressure_is_flagged_at_80_percent(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 4}, budget=Budget(max_steps=5))

    assert task.status is TaskStatus.COMPLETED
    assert "budget_pressure" in task.state.risk_flags
    assert "budget_pressure" in (await store.get_task(task.id)).state.risk_flags
    pressure = [e for e in await store.list_events(task.id) if e.kind == "budget_pressure"]
    assert len(pressure) == 1 and "max_steps" in pressure[0].message


async def test_no_budget_pressure_below_80_percent(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 3}, budget=Budget(max_steps=5))

    assert task.status is TaskStatus.COMPLETED
    assert "budget_pressure" not in task.state.risk_flags
    assert not [e for e in await store.list_events(task.id) if e.kind == "budget_pressure"]


async def test_max_llm_tokens_counts_the_models_usage(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    entry = {"content": "ok", "usage": {"prompt_tokens": 40, "completion_tokens": 10}}
    model = script({"act": [entry] * 4})

    task = await rt.run(f"{FLOWS}:ask_model", {"count": 4}, model=model, budget=Budget(max_llm_tokens=120))

    assert task.status is TaskStatus.FAILED
    assert "budget exceeded (max_llm_tokens: 150" in (task.error or "")
    assert len(await store.list_ops(task.id)) == 3
    assert "budget_pressure" in (await store.get_task(task.id)).state.risk_flags


async def test_max_wall_time_stops_the_task(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(
        f"{FLOWS}:slow_calls",
        {"ledger": ledger, "seconds": 0.3, "times": 4},
        budget=Budget(max_wall_time=0.5),
    )

    assert task.status is TaskStatus.FAILED
    assert "budget exceeded (max_wall_time" in (task.error or "")
    assert len(entries(ledger)) == 2

"""What a resumed task rebuilds from its journal: state, budget spent, the model script's position."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ratchet.policy import Budget
from ratchet.records import StepStatus, Task, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import entries
from .support import run_until_crash


async def crash_then_resume(
    store: StateStore, rt: Runtime, workflow: str, inputs: dict[str, Any], **options: Any
) -> Task:
    """Run the task until its crash point, then resume it with a fresh Runtime."""
    task_id = await run_until_crash(rt, workflow, inputs, **options)
    return await Runtime(store).resume(task_id)


async def test_state_patches_are_rebuilt_on_replay(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await crash_then_resume(store, rt, "patch_crash_patch", {"ledger": ledger})

    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.result, dict)
    assert task.result["facts"] == ["before", "after"]
    assert [f.key for f in (await store.get_task(task.id)).state.known_facts] == ["before", "after"]
    newest = await store.latest_checkpoint(task.id)
    assert newest is not None and [f.key for f in newest.state.known_facts] == ["before", "after"]


async def test_the_budget_pressure_flag_survives_a_resume(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(
        rt, "patch_crash_patch", {"ledger": ledger, "steps": 4}, budget=Budget(max_steps=5)
    )
    assert "budget_pressure" in (await store.get_task(task_id)).state.risk_flags

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert "budget_pressure" in (await store.get_task(task.id)).state.risk_flags
    assert isinstance(task.result, dict) and isinstance(task.result["risk_flags"], list)
    assert "budget_pressure" in task.result["risk_flags"]
    newest = await store.latest_checkpoint(task.id)
    assert newest is not None and "budget_pressure" in newest.state.risk_flags


async def test_the_model_script_continues_where_the_task_stopped(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script(
        {
            "act": [
                {"error": {"status": 503, "retry_after": 0}},
                {"content": "one"},
                {"content": "two"},
                {"content": "three"},
            ]
        }
    )

    task = await crash_then_resume(
        store, rt, "models_with_crash", {"ledger": ledger, "after": 2}, model=model
    )

    assert task.status is TaskStatus.COMPLETED
    assert task.result == ["one", "two", "three"]
    ordinals = [op.meta.get("ordinal") for op in await store.list_ops(task.id) if op.kind == "model"]
    assert ordinals == [1, 2, 3]


async def test_replayed_model_calls_count_against_the_token_budget(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    entry = {"content": "ok", "usage": {"prompt_tokens": 40, "completion_tokens": 10}}
    model = script({"act": [entry] * 4})

    task = await crash_then_resume(
        store,
        rt,
        "models_with_crash",
        {"ledger": ledger, "before": 2, "after": 2},
        model=model,
        budget=Budget(max_llm_tokens=120),
    )

    assert task.status is TaskStatus.FAILED
    assert "budget exceeded (max_llm_tokens: 150" in (task.error or "")
    assert len(entries(ledger, "crash")) == 2


async def test_a_step_the_worker_died_in_is_finished_by_the_resume(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(rt, "crash_in_step", {"ledger": ledger})
    first_step, *_ = await store.list_steps(task_id)
    assert first_step.status is StepStatus.COMPLETED

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.status for s in await store.list_steps(task_id)] == [StepStatus.COMPLETED] * 3
    assert [len(entries(ledger, f"s{i}")) for i in range(3)] == [1, 1, 1]


async def test_a_failed_step_the_workflow_recovered_from_replays_on_resume(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(rt, "recovers_from_a_failed_step", {"ledger": ledger})

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "s0 failed"
    assert [s.status for s in await store.list_steps(task_id)] == [StepStatus.FAILED, StepStatus.COMPLETED]
    assert [len(entries(ledger, label)) for label in ("s0", "s1")] == [2, 1]

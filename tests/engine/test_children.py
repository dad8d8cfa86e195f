"""Child tasks: start, wait, run; replay; gather order; fan-out bound; failures; cancel; budgets."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from ratchet.engine.run.worker import Worker
from ratchet.engine.task_spec import AGENT_LOOP
from ratchet.policy import Budget
from ratchet.pricing import cost_of
from ratchet.providers import Usage
from ratchet.records import OpKind, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore
from ratchet.views.task import load_task_view

from ..helpers.scripts import plan, say, verdict
from .child_flows import BUDGET, HERE, most_at_once
from .flows import Crash, entries


async def test_start_wait_and_run_child_return_the_childs_result(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{HERE}:one_child", {"ledger": ledger})
    with pytest.raises(Crash):  # the first run dies after starting the child (the crash point)
        await rt.resume(task_id)
    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == {"child_id": f"{task_id}.0", "result": "child", "again": "second"}
    children = await store.list_children(task_id)
    assert [c.id for c in children] == [f"{task_id}.0", f"{task_id}.3"]
    assert [c.name for c in children] == ["leaf", "second child"]
    assert all(c.status is TaskStatus.COMPLETED and c.parent_id == task_id for c in children)
    assert [len(entries(ledger, label)) for label in ("child", "second")] == [1, 1]
    ops = await store.list_ops(task_id)
    assert [(op.kind, op.name) for op in ops if op.kind is OpKind.CHILD] == [
        (OpKind.CHILD, "start_child"),
        (OpKind.CHILD, "wait_child"),
        (OpKind.CHILD, "start_child"),
        (OpKind.CHILD, "wait_child"),
    ]


async def test_a_replay_never_starts_a_second_child(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await rt.submit(f"{HERE}:one_child", {"ledger": ledger})
    with pytest.raises(Crash):
        await rt.resume(task_id)
    assert [c.id for c in await store.list_children(task_id)] == [f"{task_id}.0"]

    await Runtime(store).resume(task_id)

    children = await store.list_children(task_id)
    assert len(children) == 2
    assert len(entries(ledger, "child")) == 1
    started = [e for e in await store.list_events(task_id) if e.kind == "child_started"]
    assert len(started) == 2


async def test_gathered_children_take_ids_and_seqs_in_call_order(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{HERE}:gathered", {"ledger": ledger})

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ["a", "b", "c"]
    children = await store.list_children(task.id)
    by_id = {c.id: c.inputs_params["label"] for c in children}
    assert by_id == {f"{task.id}.0": "a", f"{task.id}.2": "b", f"{task.id}.4": "c"}


async def test_fan_out_of_twenty_never_runs_more_than_three_at_once(
    store: StateStore, rt: Runtime, ledger: str, tmp_path: Path
) -> None:
    marks = str(tmp_path / "marks")
    task = await rt.run(
        f"{HERE}:fan_out", {"ledger": ledger, "marks": marks, "count": 20, "limit": 3, "seconds": 0.05}
    )

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == [f"child-{i}" for i in range(20)]
    assert len(await store.list_children(task.id)) == 20
    assert 1 < most_at_once(marks) <= 3
    assert all(len(entries(ledger, f"child-{i}")) == 1 for i in range(20))


async def test_a_failed_child_raises_operation_failed_in_its_parent(store: StateStore, rt: Runtime) -> None:
    task = await rt.run(f"{HERE}:catches_failure")

    assert task.status is TaskStatus.COMPLETED
    [child] = await store.list_children(task.id)
    assert child.status is TaskStatus.FAILED
    assert isinstance(task.result, str)
    assert task.result.startswith(f"child task {child.id} failed: ")
    assert "the child broke" in task.result


async def test_a_parent_waiting_on_children_holds_no_lease_and_cancelling_it_cancels_them(
    store: StateStore, rt: Runtime, ledger: str, tmp_path: Path
) -> None:
    task_id = await rt.submit(f"{HERE}:waits_long", {"ledger": ledger, "marks": str(tmp_path / "m")})
    run = asyncio.create_task(rt.resume(task_id))
    for _ in range(200):
        parent = await store.get_task(task_id)
        children = await store.list_children(task_id)
        if parent.waiting_on is WaitReason.CHILDREN and len(children) == 2:
            break
        await asyncio.sleep(0.05)
    assert parent.status_text == "waiting(children)"
    lease = await store.get_lease(task_id)
    assert lease is None or lease.released

    await rt.cancel(task_id)
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)

    assert (await store.get_task(task_id)).status is TaskStatus.CANCELLED
    for child in await store.list_children(task_id):
        stored = await store.get_task(child.id)
        assert stored.status is TaskStatus.CANCELLED
        assert stored.error == f"its parent {task_id} was cancelled"


async def test_budgets_nest_and_a_child_gets_no_more_than_its_parent_has_left(
    store: StateStore, rt: Runtime
) -> None:
    task = await rt.run(f"{HERE}:spends", budget=BUDGET)

    first, second = await store.list_children(task.id)
    assert (first.status, first.budget.max_steps) == (TaskStatus.COMPLETED, 3)
    assert (second.status, second.budget.max_steps) == (TaskStatus.FAILED, 1)
    assert "budget exceeded (max_steps: 2 of 1)" in (second.error or "")
    assert task.status is TaskStatus.FAILED
    assert task.error == "budget exceeded (max_steps: 3 of 3 used; nothing left to give a child task)"


async def test_an_agent_runs_as_a_child_with_its_own_model_and_workspace(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": [plan("measure")], "act": [say("measured: fast")], "verify": [verdict(True)]})

    task = await rt.run(f"{HERE}:agent_child", {"model": model})

    assert task.status is TaskStatus.COMPLETED, task.error
    [child] = await store.list_children(task.id)
    assert (child.status, child.agent, child.instruction) == (
        TaskStatus.COMPLETED,
        "helper",
        "make X fast again",
    )
    assert child.workflow == AGENT_LOOP
    assert child.model == model
    assert child.workspace is not None
    assert task.result == child.result


async def test_a_worker_with_one_slot_runs_a_parent_and_its_children(
    store: StateStore, rt: Runtime, ledger: str, tmp_path: Path
) -> None:
    """The parent lets its slot go while it waits: otherwise its children could never run."""
    inputs: dict[str, JsonValue] = {
        "ledger": ledger,
        "marks": str(tmp_path / "marks"),
        "count": 3,
        "limit": 2,
        "seconds": 0.05,
    }
    task_id = await rt.submit(f"{HERE}:fan_out", inputs)

    await asyncio.wait_for(Worker(store, concurrency=1, poll_interval=0.05).run(until_idle=True), 60)

    task = await store.get_task(task_id)
    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ["child-0", "child-1", "child-2"]
    waits = [e for e in await store.list_events(task_id) if e.kind == "waiting"]
    assert waits and all(e.data["reason"] == "children" for e in waits)


async def test_a_child_spends_no_more_tokens_than_its_parent_has_left(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    spends_100 = {"content": "hello", "usage": {"prompt_tokens": 60, "completion_tokens": 40}}
    model = script({"act": [spends_100, spends_100]})

    task = await rt.run(f"{HERE}:token_parent", {"model": model}, budget=Budget(max_llm_tokens=150))

    first, second = await store.list_children(task.id)
    assert (first.status, first.budget.max_llm_tokens) == (TaskStatus.COMPLETED, 150)
    assert second.budget.max_llm_tokens == 50  # what the parent had left when it started
    assert (second.status, second.error) == (
        TaskStatus.FAILED,
        "budget exceeded (max_llm_tokens: 100 tokens of 50 tokens)",
    )
    assert task.status is TaskStatus.FAILED
    assert task.error is not None and task.error.endswith(f"child task {second.id} failed: {second.error}")


async def test_a_child_spends_no_more_money_than_its_parent_has_left_and_its_cost_counts_in_the_parent(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 500}
    one = cost_of("openai", "gpt-4o", Usage.model_validate(usage))
    assert one is not None
    spends_one = {"content": "hello", "usage": usage}
    model = script({"priced_as": "openai:gpt-4o", "act": [spends_one, spends_one]})

    task = await rt.run(f"{HERE}:token_parent", {"model": model}, budget=Budget(max_cost=1.5 * one))

    first, second = await store.list_children(task.id)
    assert first.status is TaskStatus.COMPLETED
    assert second.budget.max_cost == pytest.approx(0.5 * one)  # what the parent had left when it started
    assert second.status is TaskStatus.FAILED
    assert "budget exceeded (max_cost" in (second.error or "")
    async with store.reading() as tx:
        spend = (await load_task_view(tx, task.id)).spend
    assert spend.cost == pytest.approx(2 * one)
    assert task.cost == pytest.approx(2 * one)  # the parent's record keeps it, its children's included

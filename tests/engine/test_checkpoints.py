"""Checkpoints: strategies, rotation, validation before resume, and fork."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ratchet.errors import CannotResume
from ratchet.records import OpStatus, StepStatus, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS, entries
from .support import snapshot


async def test_every_step_writes_one_checkpoint_per_completed_step(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 3})

    checkpoints = await store.list_checkpoints(task.id)
    assert [c.number for c in checkpoints] == [1, 2, 3]
    assert [c.last_seq for c in checkpoints] == [0, 1, 2]
    assert [[s.status for s in c.steps] for c in checkpoints] == [
        [StepStatus.COMPLETED],
        [StepStatus.COMPLETED] * 2,
        [StepStatus.COMPLETED] * 3,
    ]


async def test_every_iteration_also_checkpoints_before_each_model_call_after_the_first(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await rt.run(
        f"{FLOWS}:iterating",
        {"count": 3},
        model=script({"act": [{"content": f"went {i}"} for i in range(3)]}),
    )

    assert task.status is TaskStatus.COMPLETED
    assert [c.last_seq for c in await store.list_checkpoints(task.id)] == [0, 1]


async def test_on_state_change_checkpoints_after_each_patch(store: StateStore, rt: Runtime) -> None:
    task = await rt.run(f"{FLOWS}:patching")

    assert task.status is TaskStatus.COMPLETED
    assert task.result == ["k1"]
    checkpoints = await store.list_checkpoints(task.id)
    assert [c.last_seq for c in checkpoints] == [0, 1]
    assert [f.key for f in checkpoints[0].state.known_facts] == ["k1"]
    assert checkpoints[0].state.open_questions == []
    assert checkpoints[1].state.open_questions == ["why?"]


async def test_a_state_patch_is_stored_with_its_event(store: StateStore, rt: Runtime) -> None:
    task = await rt.run(f"{FLOWS}:patching")

    stored = await store.get_task(task.id)
    assert [f.key for f in stored.state.known_facts] == ["k1"]
    assert stored.state.open_questions == ["why?"]
    assert [e.kind for e in await store.list_events(task.id)].count("state") == 2


async def test_checkpoint_policy_keep_rotates_old_checkpoints(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:stepped_keep_two", {"ledger": ledger})

    assert task.status is TaskStatus.COMPLETED
    assert [c.number for c in await store.list_checkpoints(task.id)] == [3, 4]


async def test_gc_keeps_the_newest_checkpoints_of_every_task(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    first = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 3})
    second = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 2})

    deleted = await rt.gc(keep=1)

    assert deleted == 3
    assert [c.number for c in await store.list_checkpoints(first.id)] == [3]
    assert [c.number for c in await store.list_checkpoints(second.id)] == [2]


async def test_gc_drops_checkpoints_older_than_a_duration_but_never_the_newest(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    old = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 3})
    await asyncio.sleep(0.3)
    fresh = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 2})

    deleted = await rt.gc(older_than=0.2)

    assert deleted == 2
    assert [c.number for c in await store.list_checkpoints(old.id)] == [3]
    assert [c.number for c in await store.list_checkpoints(fresh.id)] == [1, 2]


async def test_resume_refuses_a_stale_checkpoint_unless_forced(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:sleeps_after_step", {"ledger": ledger})
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    await asyncio.sleep(0.4)

    with pytest.raises(CannotResume, match="checkpoint"):
        await Runtime(store).resume(task.id)
    resumed = await Runtime(store).resume(task.id, force=True)

    assert (resumed.status, resumed.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    assert len(entries(ledger, "before")) == 1


async def test_resume_accepts_a_fresh_checkpoint(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{FLOWS}:sleeps_after_step", {"ledger": ledger, "seconds": 0.05})
    await asyncio.sleep(0.1)

    resumed = await Runtime(store).resume(task.id)

    assert resumed.status is TaskStatus.COMPLETED
    assert resumed.result == "woke"


async def test_fork_replays_up_to_the_checkpoint_and_runs_the_rest_live(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    original = await rt.run(f"{FLOWS}:stepped", {"ledger": ledger, "steps": 3})
    before = await snapshot(store, original.id)

    fork_id = await rt.fork(original.id, checkpoint=1)
    forked = await Runtime(store).resume(fork_id)

    assert forked.status is TaskStatus.COMPLETED
    assert forked.forked_from == original.id
    assert [len(entries(ledger, f"s{i}")) for i in range(3)] == [1, 2, 2]
    fork_ops = await store.list_ops(fork_id)
    original_ops = before[1]
    assert fork_ops[0].output == original_ops[0].output
    assert fork_ops[1].output != original_ops[1].output
    assert all(op.status is OpStatus.SUCCEEDED for op in fork_ops)
    assert [op.idempotency_key for op in fork_ops[1:]] == [f"{fork_id}:1", f"{fork_id}:2"]
    assert [s.status for s in await store.list_steps(fork_id)] == [StepStatus.COMPLETED] * 3
    assert await snapshot(store, original.id) == before

"""Helpers for the engine tests: run a task until its worker "dies"; leave or read stored state by hand."""

from __future__ import annotations

from typing import Any

import pytest

from ratchet.records import Operation, OpStatus, Task, TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS, Crash


async def run_until_crash(rt: Runtime, workflow: str, inputs: dict[str, Any], **options: Any) -> str:
    """Submit the `workflow` of `tests.engine.flows` and run it until its worker "dies" (`Crash`).

    Returns the task's id; the task is left as the dead worker left it.
    """
    task_id = await rt.submit(f"{FLOWS}:{workflow}", inputs, **options)
    with pytest.raises(Crash):
        await rt.resume(task_id)
    return task_id


async def leave_in_flight(store: StateStore, task_id: str, op: Operation) -> None:
    """Leave the task as a dead worker would: running, `op` in the journal as it is, lease let go.

    A ``started`` op is one caught in flight; a ``failed`` one with
    ``next_attempt_at`` is one whose worker died during the backoff.
    """
    lease = await store.claim_lease(task_id, "dead-worker", 30.0)
    assert lease is not None
    task = await store.get_task(task_id)
    async with store.transaction(fence=lease) as tx:
        await tx.update_task(task.transition(TaskStatus.RUNNING, started_at=utcnow()))
        if op.status is OpStatus.STARTED:
            await tx.record_op_started(op)
        else:
            await tx.record_op_finished(op)
    await store.release_lease(lease)


async def snapshot(
    store: StateStore, task_id: str
) -> tuple[Task, list[Any], list[Any], list[Any], list[Any]]:
    """Everything stored for a task, to compare before and after."""
    return (
        await store.get_task(task_id),
        await store.list_ops(task_id),
        await store.list_events(task_id),
        await store.list_steps(task_id),
        await store.list_checkpoints(task_id),
    )

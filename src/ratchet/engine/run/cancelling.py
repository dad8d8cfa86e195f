"""Cancelling a task, and with it every child task it started that has not ended."""

from __future__ import annotations

import contextlib

from ...errors import CannotResume, LeaseLost
from ...records import Event, StepStatus, Task, TaskStatus
from ...store import StateStore
from ..children import wake_parent
from .holders import WorkerIdentity

__all__ = ["cancel_task"]


async def cancel_task(
    store: StateStore, task_id: str, *, reason: str, identity: WorkerIdentity, lease_ttl: float
) -> Task:
    """Cancel a task that has not ended, then its unfinished children (and theirs).

    The lease is taken over (its token grows), so a worker running the task
    finds its lease lost and stops without writing; then the task, its open
    steps and its queued triggers are cancelled together, and a parent
    waiting on it is woken. A parent cancelled first starts no more children.

    Raises:
        CannotResume: the task already ended.
    """
    cancelled = await _cancel_one(store, task_id, reason, identity, lease_ttl)
    pending = [task_id]
    while pending:
        for child in await store.list_children(pending.pop()):
            pending.append(child.id)
            if not child.status.is_terminal:
                try:
                    await _cancel_one(
                        store, child.id, f"its parent {task_id} was cancelled", identity, lease_ttl
                    )
                except CannotResume:  # it ended meanwhile
                    continue
    return cancelled


async def _cancel_one(
    store: StateStore, task_id: str, reason: str, identity: WorkerIdentity, lease_ttl: float
) -> Task:
    task = await store.get_task(task_id)
    if task.status.is_terminal:
        raise CannotResume(f"task {task_id} is already {task.status}; it cannot be cancelled")
    lease = await store.claim_lease(
        task_id,
        f"cancel:{identity.name}",
        lease_ttl,
        host=identity.host,
        pid=identity.pid,
        pid_space=identity.pid_space,
        pid_started=identity.pid_started,
        take_over=True,
    )
    assert lease is not None
    try:
        async with store.transaction(fence=lease) as tx:
            task = await tx.get_task(task_id)
            if task.status.is_terminal:
                raise CannotResume(f"task {task_id} is already {task.status}; it cannot be cancelled")
            cancelled = task.transition(TaskStatus.CANCELLED, error=reason)
            steps = [
                s.transition(StepStatus.CANCELLED) if not s.status.is_terminal else s
                for s in await tx.list_steps(task_id)
            ]
            await tx.replace_steps(task_id, steps)
            await tx.update_task(cancelled)
            await tx.delete_triggers(task_id)
            await tx.append_event(
                Event(
                    task_id=task_id,
                    kind="task_cancelled",
                    message=f"task cancelled: {reason}",
                    display_message=f"Cancelled: {reason}",
                )
            )
            await wake_parent(tx, cancelled)
    finally:
        with contextlib.suppress(LeaseLost):
            await store.release_lease(lease)
    return cancelled

"""`TaskDeleteOps`: deleting a task and everything stored of it.

Part of `StoreOps` (store.py). What may be deleted is decided here, once
(`check_deletable`); the memory store (store/memory/task_delete.py) and every SQL store
(store/sql/task_delete.py) only remove the rows.

Only an ended task (completed, failed or cancelled) is deleted: a queued,
running or waiting one has a worker, a trigger or a person about to write to
it (cancel it first), and a task whose lease is still live may have a worker
finishing its last writes. A task with child tasks is refused until they are
deleted: a child's ``parent_id`` would name no task, and deleting a whole tree
at once from one id would be too easy to do by mistake (a parent's journal
already holds what it needed from its children).

The log of task changes (task_changes.py) keeps the task's entries: it is
a gapless, totally ordered feed read by position, where a removed entry would
leave a gap, and a removed last entry a position given out twice (a watcher
past it would miss the next change). Its entries hold the task's id, name,
agent and status, never its inputs, journal or results.
"""

from __future__ import annotations

import abc
from typing import Protocol

from ...errors import CannotDelete
from ...records import Lease, Task

__all__ = ["TaskDeleteOps", "check_deletable"]


class _Reads(Protocol):
    async def get_task_locked(self, task_id: str) -> Task: ...

    async def list_children(self, parent_id: str) -> list[Task]: ...

    async def get_lease(self, task_id: str) -> Lease | None: ...


class TaskDeleteOps(abc.ABC):
    """Deleting a task and every row of it."""

    @abc.abstractmethod
    async def delete_task(self, task_id: str) -> None:
        """Delete the task and every row of it: steps, journal and its contents, messages, events,
        artifacts, triggers, checkpoints, approvals, inbox, grants, leases and their history.

        Raises:
            TaskNotFound: no task has that id.
            CannotDelete: the task has not ended, its lease is still live, or
                it has child tasks (delete them first).
        """


async def check_deletable(ops: _Reads, task_id: str) -> None:
    """Raise unless `delete_task` may delete the task (its row locked until the transaction ends).

    Raises:
        TaskNotFound: no task has that id.
        CannotDelete: the task has not ended, its lease is live, or it has child tasks.
    """
    task = await ops.get_task_locked(task_id)
    if not task.status.is_terminal:
        raise CannotDelete(
            f"task {task_id} is {task.status_text}; only an ended task can be deleted (cancel it first)"
        )
    lease = await ops.get_lease(task_id)
    if lease is not None and lease.is_live():
        raise CannotDelete(f"task {task_id} is still leased by {lease.owner}; delete it when the lease ends")
    children = await ops.list_children(task_id)
    if children:
        named = ", ".join(child.id for child in children[:3]) + (", ..." if len(children) > 3 else "")
        raise CannotDelete(f"task {task_id} has {len(children)} child task(s) ({named}); delete them first")

"""`TaskChangeOps`: the store operations of the log of task changes (see ratchet.records.changes).

Part of `StoreOps` (store.py); the memory store (store/memory/task_changes.py)
and every SQL store (store/sql/task_changes.py) implement them with the behaviour
written here. Nobody writes the log directly: `create_task` logs a
``created`` change, and `update_task` a ``status`` change when the task's
status or what it waits on moved, in the same transaction.
"""

from __future__ import annotations

import abc

from ...errors import CorruptRecord
from ...records import TaskChange

__all__ = ["TaskChangeOps"]


class TaskChangeOps(abc.ABC):
    """Reading the log of task changes, in its order."""

    @abc.abstractmethod
    async def list_task_changes(
        self, *, after: int = 0, limit: int | None = None, unreadable: list[CorruptRecord] | None = None
    ) -> list[TaskChange]:
        """The logged changes whose position is greater than `after`, by position, at most `limit`.

        Positions start at 1 and have no gap: a change is logged when its
        transaction commits, each after every change committed before it,
        so reading on from the last position seen misses nothing. A row that
        cannot be read is left out (added to `unreadable` when given; `limit`
        counts it too).
        """

    @abc.abstractmethod
    async def last_task_change(self) -> int:
        """The position of the newest logged change (0 when none was)."""

"""`TaskRowOps`: the store operations of task listings (see ratchet.records.listing).

Part of `StoreOps` (store.py); the memory store (store/memory/task_rows.py) and
every SQL store (store/sql/task_rows.py) implement them with the behaviour written here.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from ...errors import CorruptRecord
from ...records import ALL_TASKS, Task, TaskFilter, TaskRow

__all__ = ["TaskRowOps"]


class TaskRowOps(abc.ABC):
    """Listing tasks by their columns, filtered, ordered and paged by the store."""

    @abc.abstractmethod
    async def list_task_rows(
        self,
        where: TaskFilter = ALL_TASKS,
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[TaskRow]:
        """The tasks that pass `where`, oldest first (or newest first), from `offset` on, at most `limit`.

        Tasks created at the same moment keep the order they were stored in.
        Only the listed columns are read: a task whose record does not parse
        is listed all the same (`get_task` says what is wrong with it); a row
        whose columns do not decode is left out (added to `unreadable`).
        """

    @abc.abstractmethod
    async def count_task_rows(self, where: TaskFilter = ALL_TASKS) -> int:
        """How many tasks pass `where`."""

    @abc.abstractmethod
    async def get_tasks(
        self, task_ids: Sequence[str], *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Task]:
        """The whole records of the tasks `task_ids` names, in that order, read at once (a page of a listing).

        A task not stored is left out, and so is one whose record does not
        parse (added to `unreadable`, as `get_task` would have raised it).
        """

"""`TaskRowOps`: the store operations of task listings (see ratchet.records.listing).

Part of `StoreOps` (store.py); the memory store (store/memory/task_rows.py) and
every SQL store (store/sql/task_rows.py) implement them with the behaviour written here.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from ...errors import CorruptRecord, InputError
from ...records import ALL_TASKS, OLDEST_FIRST, Task, TaskCursor, TaskFilter, TaskOrder, TaskRow

__all__ = ["TaskRowOps", "check_cursor"]


def check_cursor(order: TaskOrder, after: TaskCursor | None) -> None:
    """Refuse a cursor made for another order than the listing's.

    Raises:
        InputError: it is.
    """
    if after is not None and after.order != order:
        raise InputError(
            f"cursor: it continues a listing sorted by {after.order}, not by {order}; "
            "sort as before, or start again without it"
        )


class TaskRowOps(abc.ABC):
    """Listing tasks by their columns, filtered, ordered and paged by the store."""

    @abc.abstractmethod
    async def list_task_rows(
        self,
        where: TaskFilter = ALL_TASKS,
        *,
        order: TaskOrder = OLDEST_FIRST,
        after: TaskCursor | None = None,
        limit: int | None = None,
        offset: int = 0,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[TaskRow]:
        """The tasks that pass `where`, in `order`, after `after`, from `offset` on, at most `limit`.

        `where` and `order` behave as `TaskFilter.matches` and `TaskOrder.key`
        say. Only the listed columns are read: a task whose record does not
        parse is listed all the same (`get_task` says what is wrong with it);
        a row whose columns do not decode is left out (added to `unreadable`).

        Raises:
            InputError: `after` was made for another order (`check_cursor`).
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

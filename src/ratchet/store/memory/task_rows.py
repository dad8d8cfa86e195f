"""The task listing (`TaskRowOps`) of the memory store, as part of its operations."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import CorruptRecord
from ...records import ALL_TASKS, OLDEST_FIRST, Task, TaskCursor, TaskFilter, TaskOrder, TaskRow
from ..ops.task_rows import TaskRowOps, check_cursor

__all__ = ["MemoryTaskRows", "task_row"]


def task_row(task: Task) -> TaskRow:
    """The listing's columns of `task`."""
    return TaskRow(
        id=task.id,
        name=task.name,
        status=task.status,
        waiting_on=task.waiting_on,
        agent=task.agent,
        parent_id=task.parent_id,
        created_at=task.created_at,
        updated_at=task.updated_at,
        model=task.model,
        cost=task.cost,
    )


class MemoryTaskRows(TaskRowOps):
    """Listings over the memory store's task table (JSON text by id, in the order stored)."""

    tasks: dict[str, str]

    def _matching(self, where: TaskFilter) -> list[TaskRow]:
        words = where.words
        found = (Task.from_json(text) for text in self.tasks.values())
        return [task_row(task) for task in found if where.matches(task, words)]

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
        check_cursor(order, after)
        found = self._matching(where)
        found.sort(key=order.key, reverse=order.descending)
        if after is not None:
            place = after.key()
            found = [
                row
                for row in found
                if (order.key(row) < place if order.descending else order.key(row) > place)
            ]
        found = found[offset:]
        return found if limit is None else found[:limit]

    async def count_task_rows(self, where: TaskFilter = ALL_TASKS) -> int:
        return len(self._matching(where))

    async def get_tasks(
        self, task_ids: Sequence[str], *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Task]:
        return [Task.from_json(self.tasks[task_id]) for task_id in task_ids if task_id in self.tasks]

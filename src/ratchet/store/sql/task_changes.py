"""The task-change log (`TaskChangeOps`) written once for every SQL database, as part of `SqlOps`.

A transaction notes its task changes as it goes and logs them only as it
commits (`log_task_changes`, called by `SqlTransaction.end`), under one lock
that every logging transaction takes last and holds until its commit: the
positions are then given in the order the changes become visible, so a reader
never sees position N+1 before N. The lock is taken after every other lock
the transaction holds, and its holder waits for nothing else, so it cannot
deadlock; it makes the commits of transactions that created a task or moved
its status take turns (SQLite's writers take turns anyway).
"""

from __future__ import annotations

from ...errors import CorruptRecord
from ...records import TaskChange
from ..changes import TASKS
from ..ops.task_changes import TaskChangeOps
from . import rows
from .driver import Driver

__all__ = ["SqlTaskChanges"]


class SqlTaskChanges(TaskChangeOps):
    """`TaskChangeOps` over a driver; `SqlOps` notes the changes its task writes make."""

    _d: Driver
    touched: set[str]
    noted_changes: list[TaskChange]

    def _note_task_change(self, change: TaskChange) -> None:
        self.noted_changes.append(change)

    async def log_task_changes(self) -> None:
        """Log the changes this transaction noted; the last thing it does before it commits."""
        noted, self.noted_changes = self.noted_changes, []
        if not noted:
            return
        await self._d.lock("ratchet:task_changes")
        row = await self._d.one("next_task_change_position")
        assert row is not None
        first = int(row[0])
        logged = [change.model_copy(update={"position": first + i}) for i, change in enumerate(noted)]
        await self._d.execute_many(
            "insert_task_change",
            [
                {
                    "position": change.position,
                    "task_id": change.task_id,
                    "time": rows.to_micros(change.time),
                    "record": change.to_json(),
                }
                for change in logged
            ],
        )
        await self._d.one("notify_task_changes")
        self.touched.add(TASKS)

    async def list_task_changes(
        self, *, after: int = 0, limit: int | None = None, unreadable: list[CorruptRecord] | None = None
    ) -> list[TaskChange]:
        found = await self._d.all("list_task_changes", {"after": after, "limit": limit})
        return rows.decode_each(found, rows.task_change_from_row, unreadable)

    async def last_task_change(self) -> int:
        row = await self._d.one("last_task_change")
        return 0 if row is None or row[0] is None else int(row[0])

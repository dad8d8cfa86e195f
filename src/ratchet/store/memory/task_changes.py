"""The task-change log (`TaskChangeOps`) of the memory store, as part of its operations.

The memory store's transactions take turns, so a change gets its position
as it is written: the order of positions is the order of commits.
"""

from __future__ import annotations

from ...errors import CorruptRecord
from ...records import TaskChange
from ..changes import TASKS
from ..ops.task_changes import TaskChangeOps
from .undo import UndoLog

__all__ = ["MemoryTaskChanges"]


class MemoryTaskChanges(TaskChangeOps, UndoLog):
    """The log as a dict of JSON text by position."""

    touched: set[str]

    def __init__(self) -> None:
        super().__init__()
        self.task_changes: dict[int, str] = {}

    def _note_task_change(self, change: TaskChange) -> None:
        position = len(self.task_changes) + 1  # rolled-back changes are taken out: no gap
        self._set(self.task_changes, position, change.model_copy(update={"position": position}).to_json())
        self.touched.add(TASKS)

    async def list_task_changes(
        self, *, after: int = 0, limit: int | None = None, unreadable: list[CorruptRecord] | None = None
    ) -> list[TaskChange]:
        positions = range(max(after, 0) + 1, len(self.task_changes) + 1)
        if limit is not None:
            positions = positions[:limit]
        return [TaskChange.from_json(self.task_changes[position]) for position in positions]

    async def last_task_change(self) -> int:
        return len(self.task_changes)

"""The checkpoint operations of the memory store, as part of its operations."""

from __future__ import annotations

import datetime as dt

from ...errors import CheckpointNotFound
from ...records import Checkpoint, utcnow
from ..ops import checkpoints_to_drop
from .undo import UndoLog

__all__ = ["MemoryCheckpoints"]


class MemoryCheckpoints(UndoLog):
    """Each task's checkpoints as a dict of JSON text by number."""

    def __init__(self) -> None:
        super().__init__()
        self.checkpoints: dict[str, dict[int, str]] = {}

    async def put_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        rows = self._rows(self.checkpoints, checkpoint.task_id)
        checkpoint = checkpoint.model_copy(update={"number": max(rows, default=0) + 1})
        self._set(rows, checkpoint.number, checkpoint.to_json())
        return checkpoint

    async def get_checkpoint(self, task_id: str, number: int) -> Checkpoint:
        text = self.checkpoints.get(task_id, {}).get(number)
        if text is None:
            raise CheckpointNotFound(f"task {task_id} has no checkpoint {number}")
        return Checkpoint.from_json(text)

    async def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        rows = self.checkpoints.get(task_id, {})
        return Checkpoint.from_json(rows[max(rows)]) if rows else None

    async def list_checkpoints(self, task_id: str) -> list[Checkpoint]:
        rows = self.checkpoints.get(task_id, {})
        return [Checkpoint.from_json(rows[number]) for number in sorted(rows)]

    async def rotate_checkpoints(
        self,
        *,
        keep: int | None = None,
        older_than: dt.timedelta | None = None,
        task_id: str | None = None,
        now: dt.datetime | None = None,
    ) -> int:
        ages = [
            (task, number, Checkpoint.from_json(text).created_at)
            for task, rows in self.checkpoints.items()
            if task_id is None or task == task_id
            for number, text in rows.items()
        ]
        doomed = checkpoints_to_drop(ages, keep=keep, older_than=older_than, now=now or utcnow())
        for task, number in doomed:
            self._delete(self.checkpoints[task], number)
        return len(doomed)

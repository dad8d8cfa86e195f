"""The workers' presence (`WorkerOps`) of the memory store, as part of its operations."""

from __future__ import annotations

import datetime as dt

from ...records import WorkerPresence, utcnow
from ..ops.workers import WorkerOps
from .undo import UndoLog

__all__ = ["MemoryWorkers"]


class MemoryWorkers(WorkerOps, UndoLog):
    """Each worker's record as JSON text, by its name."""

    def __init__(self) -> None:
        super().__init__()
        self.workers: dict[str, str] = {}

    async def record_worker(self, worker: WorkerPresence) -> None:
        self._set(self.workers, worker.name, worker.to_json())

    async def remove_worker(self, name: str) -> bool:
        if name not in self.workers:
            return False
        self._delete(self.workers, name)
        return True

    async def list_workers(self, *, now: dt.datetime | None = None) -> list[WorkerPresence]:
        now = now or utcnow()
        found = [WorkerPresence.from_json(self.workers[name]) for name in sorted(self.workers)]
        return [worker for worker in found if worker.is_live(now)]

    async def forget_workers(self, *, now: dt.datetime | None = None) -> int:
        now = now or utcnow()
        gone = [
            name for name, text in self.workers.items() if not WorkerPresence.from_json(text).is_live(now)
        ]
        for name in gone:
            self._delete(self.workers, name)
        return len(gone)

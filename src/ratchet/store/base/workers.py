"""`WorkerWrappers`: the workers' presence (`WorkerOps`) in `StateStore`, each in a transaction of its own.

What each does is documented on `WorkerOps` (store/ops/workers.py). Its
writes take no ``fence=``: a worker's record of itself is no task's, and no
run writes it.
"""

from __future__ import annotations

import datetime as dt

from ...records import WorkerPresence
from ..ops.workers import WorkerOps
from .wrapping import OwnTransactions

__all__ = ["WorkerWrappers"]


class WorkerWrappers(WorkerOps, OwnTransactions):
    """Recording, listing and forgetting workers, each in a transaction of its own."""

    async def record_worker(self, worker: WorkerPresence) -> None:
        return await self._write(None, lambda tx: tx.record_worker(worker))

    async def remove_worker(self, name: str) -> bool:
        return await self._write(None, lambda tx: tx.remove_worker(name))

    async def list_workers(self, *, now: dt.datetime | None = None) -> list[WorkerPresence]:
        return await self._read(lambda tx: tx.list_workers(now=now))

    async def forget_workers(self, *, now: dt.datetime | None = None) -> int:
        return await self._write(None, lambda tx: tx.forget_workers(now=now))

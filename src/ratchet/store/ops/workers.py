"""`WorkerOps`: the workers' presence in the store, so that an idle worker is seen as well as a busy one.

Part of `StoreOps` (store.py); the memory store (store/memory/workers.py) and
every SQL store (store/sql/workers.py) implement them with the behaviour
written here. A lease names only the worker that holds a task; a worker
holding none would be invisible. So each worker keeps a record of itself
(`WorkerPresence`), one per worker name: written when it starts and at each
heartbeat, removed when it stops gracefully, and counted as gone from its
``expires_at`` on if it stops without a word.
"""

from __future__ import annotations

import abc
import datetime as dt

from ...records import WorkerPresence

__all__ = ["WorkerOps"]


class WorkerOps(abc.ABC):
    """Recording, listing and forgetting the workers that say they run."""

    @abc.abstractmethod
    async def record_worker(self, worker: WorkerPresence) -> None:
        """Keep `worker` as the record of its name, replacing the one kept before (its last heartbeat)."""

    @abc.abstractmethod
    async def remove_worker(self, name: str) -> bool:
        """Remove the record of the worker `name` (it stopped); False if there was none."""

    @abc.abstractmethod
    async def list_workers(self, *, now: dt.datetime | None = None) -> list[WorkerPresence]:
        """Return the workers live at `now` (default: now), whose ``expires_at`` is later, by name."""

    @abc.abstractmethod
    async def forget_workers(self, *, now: dt.datetime | None = None) -> int:
        """Remove the records of the workers gone at `now` (``expires_at`` not later); return how many."""

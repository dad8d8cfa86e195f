"""The workers' presence (`WorkerOps`) written once for every SQL database, as part of `SqlOps`.

Each worker is one row of ``workers``, keyed by its name: a heartbeat is one
upsert of that row, whatever the number of tasks the worker runs, and the
table holds no more rows than there are workers (and the gone ones no worker
has forgotten since).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from ...errors import CorruptRecord
from ...records import WorkerPresence, utcnow
from ..ops.workers import WorkerOps
from . import rows
from .driver import Driver

__all__ = ["SqlWorkers"]

_UNDECODABLE = (ValueError, TypeError, OverflowError)


class SqlWorkers(WorkerOps):
    """`WorkerOps` over a driver; `SqlOps` supplies the driver."""

    _d: Driver

    async def record_worker(self, worker: WorkerPresence) -> None:
        params = {
            "name": worker.name,
            "host": worker.host,
            "pid": worker.pid,
            "concurrency": worker.concurrency,
            "lease_ttl": worker.lease_ttl,
            "started_at": rows.to_micros(worker.started_at),
            "heartbeat_at": rows.to_micros(worker.heartbeat_at),
            "expires_at": rows.to_micros(worker.expires_at),
        }
        await self._d.execute("record_worker", params)

    async def remove_worker(self, name: str) -> bool:
        return await self._d.execute("remove_worker", {"name": name}) > 0

    async def list_workers(self, *, now: dt.datetime | None = None) -> list[WorkerPresence]:
        found = await self._d.all("list_workers", {"now": rows.to_micros(now or utcnow())})
        return [_worker_from_row(row) for row in found]

    async def forget_workers(self, *, now: dt.datetime | None = None) -> int:
        return await self._d.execute("forget_workers", {"now": rows.to_micros(now or utcnow())})


def _worker_from_row(row: Sequence[Any]) -> WorkerPresence:
    """A worker from ``name, host, pid, concurrency, lease_ttl, started_at, heartbeat_at, expires_at``."""
    name, host, pid, concurrency, lease_ttl, started_at, heartbeat_at, expires_at = row
    try:
        return WorkerPresence(
            name=name,
            host=host,
            pid=pid,
            concurrency=concurrency,
            lease_ttl=lease_ttl,
            started_at=rows.from_micros(started_at),
            heartbeat_at=rows.from_micros(heartbeat_at),
            expires_at=rows.from_micros(expires_at),
        )
    except _UNDECODABLE as exc:
        raise CorruptRecord(
            f"the record of worker {name!r}", "workers", (name,), rows.problem_of(exc)
        ) from exc

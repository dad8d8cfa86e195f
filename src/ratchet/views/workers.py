"""Who works on the store: each live worker, idle ones included, with its slots and the tasks it holds.

`ratchet workers` and the HTTP API's ``GET /api/workers`` read the same list.
It joins two things the store keeps: the workers' records of themselves
(`WorkerPresence`, kept while a worker runs: its slots, when it started,
its last heartbeat) and the leases not released on tasks that have not
ended (which tasks each worker holds). A worker is listed when either says
so: a live worker holding nothing (idle) by its record alone; a holder
that keeps no record (a `ratchet run` process, a worker of an older
Ratchet), or one gone while holding tasks (its record expired, its leases
not yet taken over), by its leases alone. A worker gone while idle is not
listed: nothing of it is left to act on (docs/workers.md, "Seeing the
workers").
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ..records import Lease, WorkerPresence
from ..store import StoreOps
from .record_json import iso_time, lease_json

__all__ = ["WorkerView", "list_workers", "worker_json"]


@dataclass(frozen=True)
class WorkerView:
    """One worker: its record (None when it keeps none) and its leases on unfinished tasks, by task id."""

    name: str
    presence: WorkerPresence | None
    leases: tuple[Lease, ...]

    @property
    def host(self) -> str:
        return self.presence.host if self.presence is not None else self.leases[0].host

    @property
    def pid(self) -> int:
        return self.presence.pid if self.presence is not None else self.leases[0].pid

    def live(self, now: dt.datetime) -> bool:
        """Whether it was heard from in time: its record has not expired, or a lease of it is live."""
        return (self.presence is not None and self.presence.is_live(now)) or any(
            lease.is_live(now) for lease in self.leases
        )

    def held(self, now: dt.datetime) -> list[Lease]:
        """The leases it holds live at `now`: the slots it uses."""
        return [lease for lease in self.leases if lease.is_live(now)]

    @property
    def heartbeat_at(self) -> dt.datetime | None:
        """When it was last heard from: its record's last heartbeat, or a renewal or claim of a lease."""
        heard = [lease.heard_at for lease in self.leases if lease.heard_at is not None]
        if self.presence is not None:
            heard.append(self.presence.heartbeat_at)
        return max(heard, default=None)


async def list_workers(tx: StoreOps, now: dt.datetime) -> list[WorkerView]:
    """The workers live at `now` and those holding leases on unfinished tasks, by name (see the module)."""
    present = {worker.name: worker for worker in await tx.list_workers(now=now)}
    by_owner: dict[str, list[Lease]] = {}
    for lease in await tx.held_leases():
        # A lease of a task that ended is left as it was (a crash, say): not a task anyone holds.
        if not (await tx.get_task(lease.task_id)).status.is_terminal:
            by_owner.setdefault(lease.owner, []).append(lease)
    return [
        WorkerView(name, present.get(name), tuple(by_owner.get(name, ())))
        for name in sorted(present.keys() | by_owner.keys())
    ]


def worker_json(worker: WorkerView, now: dt.datetime) -> dict[str, Any]:
    """A worker as ``GET /api/workers`` and ``ratchet workers --json`` give it.

    ``concurrency`` is how many tasks it runs at once, ``slots_in_use`` how
    many of them it holds now (its live leases), ``started_at`` when it
    started: the first and last are null for a holder that keeps no record.
    ``heartbeat_at`` is when it was last heard from (its record's heartbeat, or
    a renewal or claim of a lease), ``heartbeat_age_seconds`` how long ago.
    ``expires_in_seconds`` is how long until the soonest of its leases expires
    unless renewed (below zero: it stopped renewing, and any worker may take
    those tasks over), null when it holds none.
    """
    heard = worker.heartbeat_at
    soonest = min((lease.expires_at for lease in worker.leases), default=None)
    presence = worker.presence
    return {
        "worker": worker.name,
        "host": worker.host,
        "pid": worker.pid,
        "live": worker.live(now),
        "concurrency": None if presence is None else presence.concurrency,
        "slots_in_use": len(worker.held(now)),
        "started_at": None if presence is None else iso_time(presence.started_at),
        "heartbeat_at": iso_time(heard),
        "heartbeat_age_seconds": None if heard is None else (now - heard).total_seconds(),
        "expires_in_seconds": None if soonest is None else (soonest - now).total_seconds(),
        "leases": [lease_json(lease) for lease in worker.leases],
    }

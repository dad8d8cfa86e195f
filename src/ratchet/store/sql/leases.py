"""The lease operations (`LeaseOps`) written once for every SQL database, as part of `SqlOps`.

A task's current lease is its row of ``leases``, which a claim, a renewal or
a release changes only where the lease's rule allows it (the queries of those
names say when); every claim is also a row of ``lease_claims``, the task's
lease history, which a renewal and a release bring up to date.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection
from typing import TYPE_CHECKING, cast

from ...errors import LeaseLost
from ...records import Lease, utcnow
from ..changes import TRIGGERS
from ..ops.leases import LeaseOps
from . import rows
from .driver import Driver

if TYPE_CHECKING:
    from ..ops import StoreOps

__all__ = ["SqlLeases"]

_LEASE_COLUMNS = 11  # claim_tasks rows: a lease, then the claimed task's place in line


class SqlLeases(LeaseOps):
    """`LeaseOps` over a driver; `SqlOps` supplies the driver and the topics its writes touched."""

    _d: Driver
    touched: set[str]

    async def claim_lease(
        self,
        task_id: str,
        owner: str,
        ttl: float,
        *,
        host: str = "",
        pid: int = 0,
        pid_space: str = "",
        pid_started: int = 0,
        take_over: bool = False,
        replacing: int | None = None,
        now: dt.datetime | None = None,
    ) -> Lease | None:
        now = now or utcnow()
        params = {
            "task_id": task_id,
            "owner": owner,
            "host": host,
            "pid": pid,
            "pid_space": pid_space,
            "pid_started": pid_started,
            "expires_at": rows.to_micros(now + dt.timedelta(seconds=ttl)),
            "now": rows.to_micros(now),
            "take_over": take_over,
            "replacing": replacing,
        }
        row = await self._d.one("claim_lease", params)
        if row is None:
            return None
        lease = rows.lease_from_row(row)
        await self._d.execute("record_lease_claim", rows.lease_params(lease))
        return lease

    async def claim_tasks(
        self,
        owner: str,
        ttl: float,
        *,
        host: str = "",
        pid: int = 0,
        pid_space: str = "",
        pid_started: int = 0,
        limit: int = 10,
        skip: Collection[str] = (),
        now: dt.datetime | None = None,
    ) -> list[Lease]:
        now = now or utcnow()
        params = {
            "owner": owner,
            "host": host,
            "pid": pid,
            "pid_space": pid_space,
            "pid_started": pid_started,
            "expires_at": rows.to_micros(now + dt.timedelta(seconds=ttl)),
            "now": rows.to_micros(now),
            "limit": limit,
            "skip": json.dumps(sorted(skip)),
        }
        # Each row is a lease and then where its task stands in line (created_at,
        # position): a database may return the rows of a write in any order.
        found = sorted(await self._d.all("claim_tasks", params), key=lambda row: tuple(row[_LEASE_COLUMNS:]))
        leases = [rows.lease_from_row(row[:_LEASE_COLUMNS]) for row in found]
        if leases:
            # The query leaves out the queues full as it began; claims made together (here, or by
            # another claimer at once) are judged now, last in line first, under the queue lock.
            store = cast("StoreOps", self)  # always mixed into a StoreOps, which judges queue turns
            judged = [lease for lease in reversed(leases) if await store.queue_turn(lease, now=now)]
            leases = judged[::-1]
        await self._d.execute_many("record_lease_claim", [rows.lease_params(lease) for lease in leases])
        return leases

    async def held_orphans(self, host: str, pid_space: str, *, now: dt.datetime | None = None) -> list[Lease]:
        params = {"host": host, "pid_space": pid_space, "now": rows.to_micros(now or utcnow())}
        return [rows.lease_from_row(row) for row in await self._d.all("held_orphans", params)]

    async def renew_lease(self, lease: Lease, ttl: float, *, now: dt.datetime | None = None) -> Lease:
        now = now or utcnow()
        renewed = lease.model_copy(update={"expires_at": now + dt.timedelta(seconds=ttl), "renewed_at": now})
        params = rows.lease_params(renewed)
        if await self._d.execute("renew_lease", params) == 0:
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")
        await self._d.execute("renew_lease_claim", params)
        return renewed

    async def release_lease(self, lease: Lease, *, now: dt.datetime | None = None) -> None:
        params = {**rows.lease_params(lease), "now": rows.to_micros(now or utcnow())}
        if await self._d.execute("release_lease", params) == 0:
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")
        await self._d.execute("release_lease_claim", params)
        self.touched.add(TRIGGERS)

    async def get_lease(self, task_id: str) -> Lease | None:
        row = await self._d.one("get_lease", {"task_id": task_id})
        return None if row is None else rows.lease_from_row(row)

    async def held_leases(self) -> list[Lease]:
        return [rows.lease_from_row(row) for row in await self._d.all("held_leases", {})]

    async def lease_history(self, task_id: str) -> list[Lease]:
        return [rows.lease_from_row(row) for row in await self._d.all("lease_history", {"task_id": task_id})]

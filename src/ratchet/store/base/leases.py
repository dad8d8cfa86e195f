"""`LeaseWrappers`: the lease operations (`LeaseOps`) of `StateStore`, each in a transaction of its own.

What each does is documented on `LeaseOps` (store/ops/leases.py); the writes
take a keyword ``fence=lease`` as every other write of `StateStore` does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from ...records import Lease
from ..ops.leases import LeaseOps
from .wrapping import OwnTransactions

__all__ = ["LeaseWrappers"]


class LeaseWrappers(LeaseOps, OwnTransactions):
    """Claiming, renewing, releasing and reading leases, each in a transaction of its own."""

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
        fence: Lease | None = None,
    ) -> Lease | None:
        return await self._write(
            fence,
            lambda tx: tx.claim_lease(
                task_id,
                owner,
                ttl,
                host=host,
                pid=pid,
                pid_space=pid_space,
                pid_started=pid_started,
                take_over=take_over,
                replacing=replacing,
                now=now,
            ),
        )

    async def renew_lease(
        self, lease: Lease, ttl: float, *, now: dt.datetime | None = None, fence: Lease | None = None
    ) -> Lease:
        # Apart from any group on a pool (PostgreSQL): a renewal holds its lease row exclusively
        # until its commit, and in a group that is the group's commit. Two groups each renewing
        # a lease whose journal write waits in the other (its fence, FOR SHARE, sent with that
        # group's commit) wait on each other: PostgreSQL breaks the deadlock by failing one
        # group, every member with it. Heartbeats of tasks started together renew together.
        return await self._write_apart(fence, lambda tx: tx.renew_lease(lease, ttl, now=now))

    async def release_lease(
        self, lease: Lease, *, now: dt.datetime | None = None, fence: Lease | None = None
    ) -> None:
        return await self._write(fence, lambda tx: tx.release_lease(lease, now=now))

    async def get_lease(self, task_id: str) -> Lease | None:
        return await self._read(lambda tx: tx.get_lease(task_id))

    async def held_leases(self) -> list[Lease]:
        return await self._read(lambda tx: tx.held_leases())

    async def lease_history(self, task_id: str) -> list[Lease]:
        return await self._read(lambda tx: tx.lease_history(task_id))

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
        fence: Lease | None = None,
    ) -> list[Lease]:
        return await self._write(
            fence,
            lambda tx: tx.claim_tasks(
                owner,
                ttl,
                host=host,
                pid=pid,
                pid_space=pid_space,
                pid_started=pid_started,
                limit=limit,
                skip=skip,
                now=now,
            ),
        )

    async def held_orphans(self, host: str, pid_space: str, *, now: dt.datetime | None = None) -> list[Lease]:
        return await self._read(lambda tx: tx.held_orphans(host, pid_space, now=now))

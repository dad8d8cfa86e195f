"""`LeaseOps`: the store operations of leases (a worker's claim to run a task, for a time).

Part of `StoreOps` (store.py); the memory store (store/memory/leases.py) and
every SQL store (store/sql/leases.py) implement them with the behaviour written here.
A task has at most one current lease; each claim gets a token one more than
any the task had before, and is kept in the task's lease history. A fenced
transaction checks its lease first (`StoreOps.check_fence`).
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Collection

from ...records import Lease

__all__ = ["LeaseOps"]


class LeaseOps(abc.ABC):
    """Claiming tasks, renewing and releasing the leases, and reading them and their history."""

    @abc.abstractmethod
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
        """Claim the task for `owner` for `ttl` seconds.

        Succeeds when nobody holds the task, its lease expired or was released,
        `take_over` is set, or its live lease is the one whose token is
        `replacing` (a holder known to be gone: a claim that replaced it first
        wins); the new lease's token is one more than any token the task had
        before. Returns None when another live lease holds it.
        Every claim is kept in the task's lease history. `host`, `pid`,
        `pid_space` and `pid_started` say which process holds it (`Lease`).
        """

    @abc.abstractmethod
    async def renew_lease(self, lease: Lease, ttl: float, *, now: dt.datetime | None = None) -> Lease:
        """Extend the lease to ``now + ttl``.

        Raises:
            LeaseLost: the lease was released or another claim replaced it.
        """

    @abc.abstractmethod
    async def release_lease(self, lease: Lease, *, now: dt.datetime | None = None) -> None:
        """Give the task up at `now`; it can be claimed at once.

        Raises:
            LeaseLost: the lease was already released or replaced.
        """

    @abc.abstractmethod
    async def get_lease(self, task_id: str) -> Lease | None:
        """Return the task's current lease (live, expired or released), or None."""

    @abc.abstractmethod
    async def held_leases(self) -> list[Lease]:
        """Return every lease not released (live or expired), by owner then task id."""

    @abc.abstractmethod
    async def lease_history(self, task_id: str) -> list[Lease]:
        """Return every claim made on the task, by token.

        Each claim runs from ``granted_at`` to ``expires_at``: its last
        renewal's expiry or, once ``released``, the time it was released.
        ``took_over`` marks a claim made over a lease that was still live.
        """

    @abc.abstractmethod
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
        """Claim up to `limit` orphaned tasks (see `list_orphaned_tasks`) for `owner`, leaving out `skip`.

        Returns the leases granted, in `list_orphaned_tasks` order; each is kept in its
        task's lease history. Two claimers running at once never get the
        same task.
        """

    @abc.abstractmethod
    async def held_orphans(self, host: str, pid_space: str, *, now: dt.datetime | None = None) -> list[Lease]:
        """Return the live leases held from `host` and `pid_space` on tasks otherwise orphaned.

        The tasks `list_orphaned_tasks` would return but for a live lease whose
        holder recorded that host and PID space, in its order: those a worker
        of that host may take over at once if it sees their holder's process
        is gone, rather than waiting for the lease to expire.
        """

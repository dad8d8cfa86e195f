"""The lease operations (`LeaseOps`) of the memory store, as part of its operations."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import TYPE_CHECKING, cast

from ...errors import LeaseLost
from ...records import Lease, utcnow
from ..changes import TRIGGERS
from ..ops.leases import LeaseOps
from .undo import UndoLog

if TYPE_CHECKING:
    from ..ops import StoreOps

__all__ = ["MemoryLeases"]


class MemoryLeases(LeaseOps, UndoLog):
    """Each task's current lease as JSON text, and its claims as a dict of JSON text by token.

    ``tasks`` is the memory store's task table, and ``touched`` the change-feed
    topics its transaction's writes touched.
    """

    tasks: dict[str, str]
    touched: set[str]

    def __init__(self) -> None:
        super().__init__()
        self.leases: dict[str, str] = {}
        self.lease_claims: dict[str, dict[int, str]] = {}

    def _is_current(self, lease: Lease) -> bool:
        current = self.leases.get(lease.task_id)
        stored = None if current is None else Lease.from_json(current)
        return stored is not None and stored.token == lease.token and not stored.released

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
        current = await self.get_lease(task_id)
        live = current is not None and current.is_live(now)
        if live and not take_over and (current is None or current.token != replacing):
            return None
        lease = Lease(
            task_id=task_id,
            owner=owner,
            token=(current.token if current else 0) + 1,
            expires_at=now + dt.timedelta(seconds=ttl),
            host=host,
            pid=pid,
            pid_space=pid_space,
            pid_started=pid_started,
            granted_at=now,
            took_over=live,
        )
        self._set(self.leases, task_id, lease.to_json())
        self._set(self._rows(self.lease_claims, task_id), lease.token, lease.to_json())
        return lease

    def _update_claim(self, lease: Lease) -> None:
        self._set(self._rows(self.lease_claims, lease.task_id), lease.token, lease.to_json())

    def _current(self, lease: Lease) -> Lease:
        if not self._is_current(lease):
            raise LeaseLost(f"lease {lease.token} on task {lease.task_id} was released or replaced")
        return Lease.from_json(self.leases[lease.task_id])

    async def renew_lease(self, lease: Lease, ttl: float, *, now: dt.datetime | None = None) -> Lease:
        current = self._current(lease)
        now = now or utcnow()
        renewed = current.model_copy(
            update={"expires_at": now + dt.timedelta(seconds=ttl), "renewed_at": now}
        )
        self._set(self.leases, lease.task_id, renewed.to_json())
        self._update_claim(renewed)
        return renewed

    async def release_lease(self, lease: Lease, *, now: dt.datetime | None = None) -> None:
        current = self._current(lease)
        released = current.model_copy(update={"released": True})
        self._set(self.leases, lease.task_id, released.to_json())
        ended = min(released.expires_at, now or utcnow())
        self._update_claim(released.model_copy(update={"expires_at": ended}))
        self.touched.add(TRIGGERS)

    async def get_lease(self, task_id: str) -> Lease | None:
        text = self.leases.get(task_id)
        return None if text is None else Lease.from_json(text)

    async def held_leases(self) -> list[Lease]:
        leases = [Lease.from_json(text) for text in self.leases.values()]
        return sorted((lease for lease in leases if not lease.released), key=_by_holder)

    async def lease_history(self, task_id: str) -> list[Lease]:
        rows = self.lease_claims.get(task_id, {})
        return [Lease.from_json(rows[token]) for token in sorted(rows)]

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
        leases: list[Lease] = []
        store = cast("StoreOps", self)  # always mixed into a StoreOps, which lists the orphans
        for task in await store.list_orphaned_tasks(limit=limit + len(skip), now=now):
            if len(leases) == limit:
                break
            if task.id in skip:
                continue
            lease = await self.claim_lease(
                task.id, owner, ttl, host=host, pid=pid, pid_space=pid_space, pid_started=pid_started, now=now
            )
            if lease is not None:
                leases.append(lease)
        # Judged last in line first: a queue over its concurrency gives back the claims made last.
        for lease in reversed(list(leases)):
            if not await store.queue_turn(lease, now=now):
                leases.remove(lease)
        return leases

    async def held_orphans(self, host: str, pid_space: str, *, now: dt.datetime | None = None) -> list[Lease]:
        now = now or utcnow()
        held: dict[str, Lease] = {}
        for text in self.leases.values():
            lease = Lease.from_json(text)
            if lease.is_live(now) and (lease.host, lease.pid_space) == (host, pid_space):
                held[lease.task_id] = lease
        if not held:
            return []
        # The orphans as they will be once every one of these leases has expired.
        expired = max(lease.expires_at for lease in held.values())
        store = cast("StoreOps", self)  # always mixed into a StoreOps, which lists the orphans
        orphans = await store.list_orphaned_tasks(limit=len(self.tasks), now=expired)
        return [held[task.id] for task in orphans if task.id in held]


def _by_holder(lease: Lease) -> tuple[str, str]:
    return lease.owner, lease.task_id

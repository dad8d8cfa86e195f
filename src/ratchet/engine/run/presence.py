"""A worker's presence in the store: recorded as it starts, at each heartbeat, removed as it stops.

A lease names only the worker holding a task, so an idle worker left no
trace an operator could see. `Presence` keeps the worker's record
(`WorkerPresence`) in the store while it runs: it forgets the records of
workers gone without a word and writes its own when it starts, writes it
again every third of the lease's time to live (the cadence of a lease's
renewal: one write per beat, however many tasks it runs), and removes it
when the worker stops gracefully. A worker killed at once leaves its record,
which counts as gone `GONE_AFTER_TTLS` lease TTLs after its last beat, and
is forgotten by the next worker that starts (docs/workers.md, "Seeing the
workers").

The store failing never stops the worker for this: a beat that fails is
logged once, and the next one tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from ...records import WorkerPresence, utcnow
from ...store import StateStore
from .holders import WorkerIdentity

__all__ = ["GONE_AFTER_TTLS", "Presence"]

log = logging.getLogger("ratchet.worker")

GONE_AFTER_TTLS = 3
"""A worker not heard from for this many of its lease TTLs is gone (its tasks' leases expired after one)."""


class Presence:
    """A worker's record in the store, kept while `start`ed and until `stop`."""

    def __init__(
        self, store: StateStore, identity: WorkerIdentity, *, concurrency: int, lease_ttl: float
    ) -> None:
        self.store = store
        self.lease_ttl = lease_ttl
        self.started_at = utcnow()
        self._record = WorkerPresence(
            name=identity.name,
            host=identity.host,
            pid=identity.pid,
            concurrency=concurrency,
            lease_ttl=lease_ttl,
            started_at=self.started_at,
            heartbeat_at=self.started_at,
            expires_at=self._gone_at(self.started_at),
        )
        self._beating: asyncio.Task[None] | None = None
        self._failing = False

    def start(self) -> None:
        """Record the worker now, and again every third of its lease TTL, beside its work."""
        if self._beating is None:
            self._beating = asyncio.create_task(self._beat(), name=f"ratchet:presence:{self._record.name}")

    async def stop(self) -> None:
        """Stop the heartbeat and remove the worker's record (a store that fails leaves it to expire)."""
        if self._beating is None:
            return
        self._beating.cancel()
        await asyncio.wait([self._beating])  # its cancellation, not this task's, is not raised here
        self._beating = None
        try:
            await self.store.remove_worker(self._record.name)
        except Exception as error:
            log.warning(
                "worker %s: its record could not be removed (%s); it counts as gone from %s UTC",
                self._record.name,
                error,
                f"{self._record.expires_at:%H:%M:%S}",
            )

    def _gone_at(self, heard: dt.datetime) -> dt.datetime:
        return heard + dt.timedelta(seconds=GONE_AFTER_TTLS * self.lease_ttl)

    async def _beat(self) -> None:
        with contextlib.suppress(Exception):  # the records of the gone are forgotten when some worker starts
            await self.store.forget_workers()
        while True:
            now = utcnow()
            record = self._record.model_copy(update={"heartbeat_at": now, "expires_at": self._gone_at(now)})
            try:
                await self.store.record_worker(record)
            except Exception as error:
                if not self._failing:  # once per spell of failures, not at every beat
                    log.warning(
                        "worker %s: its heartbeat could not be recorded (%s); trying again every %g s",
                        record.name,
                        error,
                        self.lease_ttl / 3,
                    )
                self._failing = True
            else:
                self._record, self._failing = record, False
            current = asyncio.current_task()
            if current is not None and current.cancelling():  # swallowed under it (runner.py, _Heartbeat)
                raise asyncio.CancelledError
            await asyncio.sleep(self.lease_ttl / 3)

"""A read replica for a PostgreSQL store's task listings (``?read_url=``; docs/stores.md, "Read replicas").

`ReplicaStore` reads a hot standby: it never migrates nor writes, and its
schema must be the primary's. `Replica` is what the primary's store holds
of it: it opens the replica at the first listing (a worker, which never
lists, never connects to it), measures its lag as each listing begins, and
when the replica cannot be read lists from the primary instead, saying so in
the listing and once in the log, then tries the replica again after
`RETRY_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg

from ....errors import StoreError
from ...base import ReplicaRead
from ...base.listings import ListingReads
from ...ops import StoreOps
from .. import catalogue
from ..transaction import SqlTransaction
from .schema import DIALECT, found_version, server_error
from .store import PostgresStore

__all__ = ["RETRY_SECONDS", "Replica", "ReplicaStore"]

log = logging.getLogger(__name__)

RETRY_SECONDS = 30.0
"""How long listings read the primary after the replica could not be read, before trying it again."""
_CONNECTION_WAIT = 10.0  # seconds a listing waits for a pooled connection to the replica


class ReplicaStore(PostgresStore):
    """A PostgreSQL hot standby, read for listings: opening checks its schema and changes nothing."""

    def __init__(self, conninfo: str, *, pool_size: int = 10) -> None:
        super().__init__(conninfo, pool_size=pool_size, create=False)

    async def _prepare(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            found = await found_version(conn, self.target)
        except psycopg.Error as exc:
            raise server_error(self.target, exc, "could not check the schema") from exc
        latest = catalogue.latest_version(DIALECT)
        if found != latest:
            raise StoreError(
                f"PostgreSQL {self.target} has schema version {found}, not {latest}: "
                "is it a replica of the store's database, and has it replayed the migration?"
            )

    async def _begin(self, *, write: bool) -> SqlTransaction:
        if write:
            raise StoreError(f"PostgreSQL {self.target} is a read replica: Ratchet only lists tasks there")
        return await super()._begin(write=False)

    async def staleness(self) -> tuple[str, float | None]:
        """The server a pooled connection reached (``host:port``) and its lag in seconds (None: unknown)."""
        pool = self._live_pool()
        try:
            async with pool.connection(timeout=_CONNECTION_WAIT) as conn:
                cursor = await conn.execute(catalogue.queries(DIALECT)["replica_staleness"])
                row = await cursor.fetchone()
                server = f"{conn.info.host}:{conn.info.port}"
        except psycopg.Error as exc:
            raise self._pool_error(exc) from None
        return server, None if row is None or row[0] is None else float(row[0])


class Replica:
    """The read replica a store's listings read, opened at the first, read from the primary while down."""

    def __init__(self, store: ReplicaStore) -> None:
        self.store = store
        self.server = store.target.server
        self._opened = False
        self._down_until = 0.0  # time.monotonic(): before it, listings do not try the replica
        self._error: str | None = None  # why it could not be read, while it cannot
        self._lock = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def listing(self, primary: ListingReads) -> AsyncIterator[tuple[StoreOps, ReplicaRead]]:
        """A consistent read on the replica, or on `primary` when the replica cannot be read."""
        read = await self._measure()
        source: ListingReads = self.store if read.used else primary
        async with source.reading() as tx:
            yield tx, read

    async def _measure(self) -> ReplicaRead:
        """Where this listing reads: the replica and its lag, or the primary and why not the replica.

        The lag is measured before the listing's transaction takes its
        snapshot: the listing holds at least every commit the lag says it does.
        """
        async with self._lock:
            if self._error is not None and time.monotonic() < self._down_until:
                return ReplicaRead(self.server, error=self._error)
            try:
                if not self._opened:
                    await self.store.open()
                    self._opened = True
                self.server, behind = await self.store.staleness()
            except StoreError as exc:
                await self._down(exc)
                assert self._error is not None
                return ReplicaRead(self.server, error=self._error)
            if self._error is not None:
                log.warning("reading task listings on the replica %s again", self.server)
                self._error = None
            return ReplicaRead(self.server, behind=behind)

    async def _down(self, exc: StoreError) -> None:
        """Close what is left of the replica and list from the primary for `RETRY_SECONDS`."""
        first = self._error is None
        self._error = str(exc)
        self._down_until = time.monotonic() + RETRY_SECONDS
        self._opened = False
        with contextlib.suppress(Exception):  # a broken pool's error is not the one to report
            await self.store.close()
        if first:
            log.warning(
                "the read replica cannot be read; task listings read the primary, "
                "trying the replica again every %.0f s: %s",
                RETRY_SECONDS,
                self._error,
            )

    async def close(self) -> None:
        async with self._lock:
            if self._opened:
                self._opened = False
                await self.store.close()

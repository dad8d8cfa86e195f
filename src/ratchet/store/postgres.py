"""The PostgreSQL store: many workers on many machines against one database.

Each transaction takes a connection from a pool (psycopg 3, async), so
transactions of different asyncio tasks run at once. Writes run at READ
COMMITTED and say what they must lock: a fenced transaction holds its lease row
``FOR SHARE`` until it commits, so no claim can replace the lease in between;
numbers handed out per owner (event seqs, message seqs, checkpoint numbers)
are allocated under a transaction-scoped advisory lock of that owner; work is
claimed with ``FOR UPDATE SKIP LOCKED``. Reads run in a REPEATABLE READ,
read-only transaction, so several reads see one moment.

Driver errors become `StoreError` at one boundary (`postgres_ops.store_error`),
with one line that names the database and never a password.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ..errors import StoreError
from ..model import Lease
from . import catalogue
from .base import StateStore
from .postgres_changes import ChangeListener, channels_of
from .postgres_ops import PostgresOps, store_error
from .postgres_schema import DIALECT, Target, connect, connection_error, prepare

__all__ = ["PostgresStore"]

_OPEN: ContextVar[frozenset[int]] = ContextVar("ratchet_open_pg_transactions", default=frozenset())
_CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise


class PostgresStore(StateStore):
    """The store of a ``postgresql://`` URL.

    Args:
        conninfo: a libpq connection string or URL, without Ratchet's options.
        url: the URL the store was named by.
        pool_size: the most connections the store opens at once.
        create: make the schema in an empty database; when False, opening
            an empty database raises `StoreNotFound`.
    """

    change_poll = None  # every writer's commits reach the feeds through LISTEN/NOTIFY

    def __init__(
        self, conninfo: str, *, url: str | None = None, pool_size: int = 10, create: bool = True
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {pool_size}")
        self.conninfo = conninfo
        self.url = url or conninfo
        self.pool_size = pool_size
        self.create = create
        self.target = Target.of(conninfo)
        self._options: dict[str, Any] = {}
        if "connect_timeout" not in conninfo:
            self._options["connect_timeout"] = _CONNECT_TIMEOUT
        self._pool: AsyncConnectionPool | None = None
        self._listener: ChangeListener | None = None

    # ------------------------------------------------------------------ opening

    async def open(self) -> None:
        conn = await connect(self.conninfo, self.target, **self._options)
        try:
            await prepare(conn, self.target, create=self.create)
        finally:
            await conn.close()
        pool = AsyncConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=self.pool_size,
            kwargs={"autocommit": True, **self._options},
            open=False,
            name=f"ratchet {self.target}",
        )
        try:
            await pool.open(wait=True, timeout=_CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            await pool.close()
            raise connection_error(self.target, exc) from None
        self._pool = pool

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _start_listening(self, topics: Iterable[str]) -> None:
        self._live_pool()
        wanted = channels_of(topics)
        listener = self._listener
        if listener is not None and wanted <= listener.channels:
            await listener.start()
            return
        if listener is not None:  # a feed on another channel: listen on both from now on
            wanted |= listener.channels
            await listener.stop()
        self._listener = ChangeListener(self.conninfo, self.target, self.publish, self._options, wanted)
        await self._listener.start()
        if listener is not None:
            self.publish(["*"])  # what the old listener would have heard while they swapped

    async def schema_version(self) -> int:
        async with self.reading() as ops:
            return await ops.schema_version()

    def _live_pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise StoreError(f"the store for PostgreSQL {self.target} is not open")
        return self._pool

    # ------------------------------------------------------------------ transactions

    def transaction(self, *, fence: Lease | None = None) -> _Transaction:
        return _Transaction(self, write=True, fence=fence)

    def reading(self) -> _Transaction:
        return _Transaction(self, write=False, fence=None)


class _Transaction:
    """``async with``: one transaction on a pooled connection, committed on success."""

    __slots__ = ("_conn", "_fence", "_store", "_write")

    def __init__(self, store: PostgresStore, *, write: bool, fence: Lease | None) -> None:
        self._store = store
        self._write = write
        self._fence = fence
        self._conn: psycopg.AsyncConnection | None = None

    async def __aenter__(self) -> PostgresOps:
        store = self._store
        pool = store._live_pool()
        holding = _OPEN.get()
        if id(store) in holding:
            raise StoreError(
                "the store was called inside one of its own transactions; "
                "call the transaction's object (tx) instead"
            )
        try:
            self._conn = await pool.getconn()
        except psycopg.Error as exc:
            raise _pool_error(store, exc) from None
        _OPEN.set(holding | {id(store)})
        ops = PostgresOps(self._conn, store.target)
        try:
            await ops.run("begin_write" if self._write else "begin_read")
            if self._fence is not None:
                await ops.check_fence(self._fence)
        except BaseException:
            await self._end(commit=False)
            raise
        return ops

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        await self._end(commit=exc_type is None)

    async def _end(self, *, commit: bool) -> None:
        store, conn = self._store, self._conn
        assert conn is not None
        queries = catalogue.queries(DIALECT)
        try:
            if commit:
                try:
                    await conn.execute(queries["commit"])
                except psycopg.Error as exc:
                    raise store_error(store.target, exc, conn) from exc
            elif not conn.closed:
                try:
                    await conn.execute(queries["rollback"])
                except psycopg.Error:
                    await conn.close()  # the pool replaces a broken connection
        finally:
            self._conn = None
            _OPEN.set(_OPEN.get() - {id(store)})
            pool = store._pool
            if pool is not None:
                await pool.putconn(conn)
            else:
                await conn.close()


def _pool_error(store: PostgresStore, exc: psycopg.Error) -> StoreError:
    if store._pool is None:
        return StoreError(f"the store for PostgreSQL {store.target} is not open")
    if type(exc).__name__ == "PoolTimeout":
        return StoreError(
            f"no connection to PostgreSQL {store.target} came free in time "
            f"(pool_size={store.pool_size}); raise ?pool_size= or check the server"
        )
    return connection_error(store.target, exc)

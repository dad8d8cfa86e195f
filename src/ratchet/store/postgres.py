"""The PostgreSQL store: many workers on many machines against one database.

Each transaction takes a connection from a pool (psycopg 3, async), so
transactions of different asyncio tasks run at once. Writes run at READ
COMMITTED and say what they must lock: a fenced transaction holds its lease row
``FOR SHARE`` until it commits, so no claim can replace the lease in between;
numbers handed out per owner (event seqs, message seqs, checkpoint numbers)
are allocated under a transaction-scoped advisory lock of that owner; work is
claimed with ``FOR UPDATE SKIP LOCKED``. Reads run in a REPEATABLE READ,
read-only transaction, so several reads see one moment.

Driver errors become `StoreError` at one boundary (`store_error`), with one
line that names the database and never a password.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ..errors import DuplicateRecord, StoreError, StoreUnavailable
from . import catalogue
from .base import StateStore
from .driver import Driver, Params, Row
from .postgres_changes import ChangeListener, channels_of
from .postgres_schema import DIALECT, Target, connect, connection_error, prepare, server_error
from .sql import SqlOps
from .sql_transaction import SqlTransaction

__all__ = ["PostgresStore", "store_error"]

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
    exclusive = False  # each transaction has a pooled connection of its own

    def __init__(
        self, conninfo: str, *, url: str | None = None, pool_size: int = 10, create: bool = True
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {pool_size}")
        super().__init__()
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

    def _live_pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise StoreError(f"the store for PostgreSQL {self.target} is not open")
        return self._pool

    # ------------------------------------------------------------------ connections

    async def _begin(self, *, write: bool) -> SqlTransaction:
        pool = self._live_pool()
        try:
            conn = await pool.getconn()
        except psycopg.Error as exc:
            raise self._pool_error(exc) from None
        driver = PostgresDriver(conn, self.target)
        return await SqlTransaction(driver, SqlOps(driver), release=self._release).begin(write=write)

    async def _release(self, driver: Driver) -> None:
        assert isinstance(driver, PostgresDriver)
        if self._pool is not None:
            await self._pool.putconn(driver.conn)  # the pool replaces a broken connection
        else:
            await driver.conn.close()

    def _pool_error(self, exc: psycopg.Error) -> StoreError:
        if self._pool is None:
            return StoreError(f"the store for PostgreSQL {self.target} is not open")
        if type(exc).__name__ == "PoolTimeout":
            return StoreUnavailable(
                f"no connection to PostgreSQL {self.target} came free in time "
                f"(pool_size={self.pool_size}); raise ?pool_size= or check the server"
            )
        return connection_error(self.target, exc)


def store_error(target: Target, exc: psycopg.Error, conn: psycopg.AsyncConnection[Any]) -> StoreError:
    """The store error for a driver error met on `conn`: the one place they are translated."""
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return DuplicateRecord(f"PostgreSQL {target}: {exc.diag.message_primary or exc}")
    if conn.closed:
        return connection_error(target, exc)
    return server_error(target, exc)


class PostgresDriver(Driver):
    """One pooled connection, for one transaction."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], target: Target) -> None:
        self.conn = conn
        self.target = target
        self._q = catalogue.queries(DIALECT)

    async def _run(self, name: str, params: Params | None) -> psycopg.AsyncCursor[Any]:
        try:
            return await self.conn.execute(self._q[name], params)
        except psycopg.Error as exc:
            raise store_error(self.target, exc, self.conn) from exc

    async def execute(self, name: str, params: Params | None = None) -> int:
        return (await self._run(name, params)).rowcount

    async def execute_many(self, name: str, params: Sequence[Params]) -> None:
        if not params:
            return
        try:
            async with self.conn.cursor() as cursor:
                await cursor.executemany(self._q[name], params)
        except psycopg.Error as exc:
            raise store_error(self.target, exc, self.conn) from exc

    async def one(self, name: str, params: Params | None = None) -> Row | None:
        row: Row | None = await (await self._run(name, params)).fetchone()
        return row

    async def all(self, name: str, params: Params | None = None) -> list[Row]:
        return await (await self._run(name, params)).fetchall()

    async def lock(self, key: str) -> None:
        await self._run("lock_sequence", {"key": key})

    async def begin(self, *, write: bool) -> None:
        await self._run("begin_write" if write else "begin_read", None)

    async def commit(self) -> None:
        await self._run("commit", None)

    async def rollback(self) -> None:
        if self.conn.closed:
            return
        try:
            await self.conn.execute(self._q["rollback"])
        except psycopg.Error:
            await self.conn.close()  # the pool replaces a broken connection

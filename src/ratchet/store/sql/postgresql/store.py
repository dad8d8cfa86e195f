"""The PostgreSQL store: many workers on many machines against one database.

Each transaction takes a connection from a pool (psycopg 3, async), so
transactions of different asyncio tasks run at once. Writes run at READ
COMMITTED and say what they must lock: a fenced transaction holds its lease row
``FOR SHARE`` until it commits, so no claim can replace the lease in between;
its fence is a statement that fails (``ratchet_check_fence``, SQLSTATE RLOST),
sent with ``BEGIN`` and the transaction's first statement in one round trip
(pipeline mode), so a journaled write costs that round trip and the commit;
numbers handed out per owner (event seqs, message seqs, checkpoint numbers)
are allocated under a transaction-scoped advisory lock of that owner; work is
claimed with ``FOR UPDATE SKIP LOCKED``. Reads run in a REPEATABLE READ,
read-only transaction, so several reads see one moment.

Behind a transaction pooler (PgBouncer) the store prepares no statements and
its change feeds poll, or listen on a direct connection of their own
(pooling.py).

Driver errors become `StoreError` at one boundary (driver.py's
`store_error`), with one line that names the database and never a password;
driver.py's `PostgresDriver` sends each transaction's statements.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ....errors import StoreError, StoreUnavailable
from ...base import ReplicaRead, StateStore
from ...base.listings import ReadReplica
from ...ops import StoreOps
from ..driver import Driver
from ..ops import SqlOps
from ..transaction import SqlTransaction
from .changes import ChangeListener, channels_of
from .driver import PostgresDriver, store_error
from .failover import FailoverWatch, IdleCheck
from .history import PostgresHistory
from .pooling import POOLED_POLL, pooled_per_transaction, say_polling
from .schema import Target, connect, connection_error, keepalives, prepare

__all__ = ["PostgresStore", "store_error"]  # store_error: driver.py's, where errors are translated

_CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise


class PostgresStore(StateStore):
    """The store of a ``postgresql://`` URL.

    Args:
        conninfo: a libpq connection string or URL, without Ratchet's options.
        url: the URL the store was named by.
        pool_size: the most connections the store opens at once.
        create: make the schema in an empty database; when False, opening
            an empty database raises `StoreNotFound`.
        transaction_pooling: whether `conninfo` leads to a transaction
            pooler (pooling.py); None finds it out as the store opens.
        listen_conninfo: a direct connection string of the same database,
            where the change feeds ``LISTEN`` (by default, `conninfo`'s).
    """

    change_poll: float | None = None  # every writer's commits reach the feeds through LISTEN/NOTIFY
    exclusive = False  # each transaction has a pooled connection of its own

    def __init__(
        self,
        conninfo: str,
        *,
        url: str | None = None,
        pool_size: int = 10,
        create: bool = True,
        transaction_pooling: bool | None = None,
        listen_conninfo: str | None = None,
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, not {pool_size}")
        super().__init__()
        self.conninfo = conninfo
        self.url = url or conninfo
        self.pool_size = pool_size
        self.create = create
        self.target = Target.of(conninfo)
        self.transaction_pooling = transaction_pooling
        """Whether the store is behind a transaction pooler: given, or found out by `open`."""
        self.listen_conninfo = listen_conninfo
        self._listen_on = listen_conninfo or conninfo
        self._options = _options_of(conninfo)
        self._pool: AsyncConnectionPool | None = None
        self._listener: ChangeListener | None = None
        self._said_polling = False
        self.replica: ReadReplica | None = None
        """Where task listings read (``?read_url=``; replica.py); None: here."""
        self.failover = FailoverWatch(self.target)  # says when the database moved to another server
        self._idle_check = IdleCheck()  # tests the pool's idle connections after one was lost
        self.history = PostgresHistory(self._live_pool, self.target, store_error)

    # ------------------------------------------------------------------ opening

    async def open(self) -> None:
        # The schema's connection prepares nothing: it may be behind a pooler (found out below).
        conn = await connect(self.conninfo, self.target, prepare_threshold=None, **self._options)
        try:
            pool = await self._open_pool()
            try:
                if self.transaction_pooling is None:
                    self.transaction_pooling = await pooled_per_transaction(conn, pool, self.target)
                await self._prepare(conn)
                await self.failover.look(conn)  # the timeline later connections are compared with
            except BaseException:
                await pool.close()
                raise
        finally:
            await conn.close()
        if self.transaction_pooling and self.listen_conninfo is None:
            self.change_poll = POOLED_POLL  # no LISTEN through the pooler
        self._pool = pool

    async def _open_pool(self) -> AsyncConnectionPool:
        pool = AsyncConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=self.pool_size,
            # Keepalives: a primary whose machine vanished (no FIN, no RST) fails its transactions in
            # ~30 s, rather than at the kernel's retransmission timeout, many minutes on.
            kwargs={"autocommit": True, **keepalives(self.conninfo), **self._options},
            configure=self._configure,
            open=False,
            name=f"ratchet {self.target}",
        )
        try:
            await pool.open(wait=True, timeout=_CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            await pool.close()
            raise connection_error(self.target, exc) from None
        return pool

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Set up each of the pool's new connections: behind a pooler, they prepare no statement;
        and read where each landed, since a failover shows as a new timeline (failover.py)."""
        if self.transaction_pooling:
            conn.prepare_threshold = None
        await self.failover.look(conn)

    async def _prepare(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Check the schema on `conn` and migrate it if behind (a read replica only checks it)."""
        await prepare(conn, self.target, create=self.create)

    async def close(self) -> None:
        if self.replica is not None:
            await self.replica.close()
        await self._idle_check.stop()
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _start_listening(self, topics: Iterable[str]) -> None:
        self._live_pool()
        if self.change_poll is not None:  # behind a pooler, with no direct URL to listen on
            if not self._said_polling:
                self._said_polling = True
                say_polling(self.target)
            return
        wanted = channels_of(topics)
        listener = self._listener
        if listener is not None and wanted <= listener.channels:
            await listener.start()
            return
        if listener is not None:  # a feed on another channel: listen on both from now on
            wanted |= listener.channels
            await listener.stop()
        where, options = self._listen_on, _options_of(self._listen_on)
        self._listener = ChangeListener(where, Target.of(where), self.publish, options, wanted)
        await self._listener.start()
        if listener is not None:
            self.publish(["*"])  # what the old listener would have heard while they swapped

    def _live_pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise StoreError(f"the store for PostgreSQL {self.target} is not open")
        return self._pool

    @contextlib.asynccontextmanager
    async def listing(self) -> AsyncIterator[tuple[StoreOps, ReplicaRead | None]]:
        if self.replica is None:
            async with super().listing() as read:
                yield read
            return
        async with self.replica.listing(self) as read:
            yield read

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
        if self._pool is None:
            await driver.conn.close()
            return
        lost = driver.conn.closed
        await self._pool.putconn(driver.conn)  # the pool replaces a broken connection
        if lost:  # and its idle siblings are likely broken too (a restart, a failover)
            self._idle_check.start(self._pool)

    def _pool_error(self, exc: psycopg.Error) -> StoreError:
        if self._pool is None:
            return StoreError(f"the store for PostgreSQL {self.target} is not open")
        if type(exc).__name__ == "PoolTimeout":
            return StoreUnavailable(
                f"no connection to PostgreSQL {self.target} came free in time "
                f"(pool_size={self.pool_size}): each was busy, or none could be made (the server "
                "is down, or no server of the URL takes writes: a failover under way); check the "
                "server, or raise ?pool_size="
            )
        return connection_error(self.target, exc)


def _options_of(conninfo: str) -> dict[str, Any]:
    """The connection options Ratchet adds to `conninfo`: a time limit on connecting, unless it has one."""
    return {} if "connect_timeout" in conninfo else {"connect_timeout": _CONNECT_TIMEOUT}

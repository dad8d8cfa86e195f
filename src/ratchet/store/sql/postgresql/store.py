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

Driver errors become `StoreError` at one boundary (`store_error`), with one
line that names the database and never a password.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg
from psycopg.generators import execute
from psycopg_pool import AsyncConnectionPool

from ....errors import DuplicateRecord, StoreError, StoreUnavailable
from ...base import StateStore
from .. import catalogue
from ..driver import Driver, Params, Row
from ..ops import SqlOps
from ..transaction import SqlTransaction
from .changes import ChangeListener, channels_of
from .history import PostgresHistory
from .schema import DIALECT, Target, connect, connection_error, prepare, server_error

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
        self.history = PostgresHistory(self._live_pool, self.target, store_error)

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


_FENCE_FAILED = "RLOST"  # what ratchet_check_fence raises (migration 0013)
_NOTHING_WRITTEN = "RNONE"  # what ratchet_expect_written raises (migration 0013)

_Held = tuple[str, "Params | Sequence[Any] | None", "str | None", "Callable[[], BaseException] | None", int]
"""A statement waiting for the next: query, values, the SQLSTATE it fails with, that failure, its segment."""

_CALLER = -1  # the segment of the statement whose caller waits for its result: never a member's held ones


class PostgresDriver(Driver):
    """One pooled connection, for one transaction.

    ``BEGIN``, the checks (`check`) and the journal's writes (`write`) wait,
    unsent, for the transaction's next statement or its commit, and go with
    it in one pipeline: one round trip. A check or write that fails raises in
    the database (its own SQLSTATE), which aborts the transaction: nothing
    after it runs, and the error becomes the failure the store gave with it.

    A group commit's members (store/group_commit) each begin in a savepoint
    (a *segment* of the transaction). A member whose block only held
    statements back leaves them waiting (`hold_member`): the whole group's
    go with its commit, one round trip, as one string of statements
    (`_send_as_text`: psycopg's pipeline costs a wait on the event loop per
    statement). If one of them fails, the transaction is rolled back to that
    member's savepoint, the member is refused (`refusal`), and the members
    after it are sent again: the others commit.
    """

    def __init__(self, conn: psycopg.AsyncConnection[Any], target: Target) -> None:
        self.conn = conn
        self.target = target
        self._q = catalogue.queries(DIALECT)
        # Sent with the next statement: (query, values, the SQLSTATE it fails with, the failure
        # that SQLSTATE means, its segment: 0 outside any savepoint, else the member's number).
        self._waiting: list[_Held] = []
        self._segment = 0
        self._held: set[int] = set()  # segments whose member ended, its statements held back
        self._refused: dict[int, BaseException] = {}

    async def _run(self, name: str, params: Params | Sequence[Any] | None) -> psycopg.AsyncCursor[Any]:
        if self._waiting:
            cursor = await self._run_pipelined(self._q[name], params)
            assert cursor is not None
            return cursor
        try:
            return await self.conn.execute(self._q[name], params)
        except psycopg.Error as exc:
            raise store_error(self.target, exc, self.conn) from exc

    async def _run_pipelined(
        self, query: str | None, params: Params | Sequence[Any] | None
    ) -> psycopg.AsyncCursor[Any] | None:
        """Send what waits, then `query`, in one pipeline; return the last cursor, its results in."""
        waiting, self._waiting = self._waiting, []
        if query is not None:
            waiting.append((query, params, None, None, _CALLER))
        while True:
            if query is None or (query == self._commit and self._held):
                # A flush (a group's leader, or a member in its turn), or a group's commit with
                # its members' statements: no result is read, so they go as one string, one
                # wait on the event loop in all (`_send_as_text`).
                failed, error = await self._send_as_text(waiting)
                if error is None:
                    return None
            else:
                cursor, failed, error = await self._send_in_pipeline(waiting)
                if error is None:
                    return cursor
            sql, _, sqlstate, failure, segment = waiting[failed]
            mine = failure() if failure is not None and error.sqlstate == sqlstate else None
            if mine is not None and segment in self._held and sql != self._savepoint:
                # A member whose block ended: refuse it alone; the rest go again after its savepoint.
                self._refused[segment] = mine
                self._held.discard(segment)
                # Alone, before the rest: after a failed pipeline it also deallocates the
                # statements psycopg forgot (`_send_in_pipeline`) before any is prepared again.
                try:
                    await self.conn.execute(self._q["rollback_to_savepoint"])
                except psycopg.Error as exc:
                    raise store_error(self.target, exc, self.conn) from exc
                waiting = [held for held in waiting[failed + 1 :] if held[4] != segment]
                if not waiting:
                    return None
                continue
            if mine is not None:
                # The rollback that follows (the caller's, or `commit`'s) keeps nothing of it.
                raise mine from None
            raise store_error(self.target, error, self.conn) from error

    async def _send_in_pipeline(
        self, waiting: list[_Held]
    ) -> tuple[psycopg.AsyncCursor[Any] | None, int, psycopg.Error | None]:
        """Send `waiting` in one pipeline: the last cursor, or the failed statement's index and its error."""
        cursors: list[psycopg.AsyncCursor[Any]] = []
        error: psycopg.Error | None = None
        try:
            async with self.conn.pipeline():
                for sql, values, _, _, _ in waiting:
                    try:
                        cursors.append(await self.conn.execute(sql, values))
                    except psycopg.Error as sent:
                        # Not raised through the pipeline's exit: psycopg would log a warning
                        # of its own ("error ignored terminating ...") beside ours.
                        error = sent
                        break
            # Leaving the pipeline synced it: every result is in, and the first error raised.
        except psycopg.Error as synced:
            error = error or synced
        if error is None:
            return (cursors[-1] if cursors else None), -1, None
        # psycopg names a statement it means to prepare when it sends its Parse, and forgets the
        # name only if that very execute fails. A Parse queued after the failed statement never
        # ran (the server skips to the pipeline's sync), yet its name stays: its next execute
        # would bind to a statement that does not exist. Nor does a ROLLBACK after it help:
        # psycopg looks at a statement's status only the first time it meets that statement.
        # So forget them all: the next execute (the rollback that follows) deallocates the
        # server's too, and the statements are prepared again as they recur.
        self.conn._prepared.clear()
        # The statement that failed is the first without a result: it aborted the
        # transaction, and nothing after it ran.
        failed = next((i for i, cursor in enumerate(cursors) if cursor.pgresult is None), len(cursors))
        return None, min(failed, len(waiting) - 1), error

    async def _send_as_text(self, waiting: list[_Held]) -> tuple[int, psycopg.Error | None]:
        """Send `waiting` as one string of statements: the failed one's index and its error, if one failed.

        Why not the pipeline: psycopg waits on the event loop once per
        statement it sends in one (about 50 us of CPU here), and a group's
        members are three statements each. Bound here (as psycopg's
        `AsyncClientCursor` binds, quoting each value), they cost one wait
        in all. The server runs them in order and stops at the first that
        fails: its result is the first error among the results.
        """
        binder = psycopg.AsyncClientCursor(self.conn)
        # Each on lines of its own: a query of the catalogue may end in a comment line.
        text = "\n;\n".join(binder.mogrify(sql, values) for sql, values, _, _, _ in waiting)
        pgconn = self.conn.pgconn
        try:
            async with self.conn.lock:
                pgconn.send_query(text.encode())
                results = await self.conn.wait(execute(pgconn))
        except psycopg.Error as exc:
            return len(waiting) - 1, exc
        for index, result in enumerate(results):
            if result.status == psycopg.pq.ExecStatus.FATAL_ERROR:
                error = psycopg.errors.error_from_result(result, encoding=self.conn.info.encoding)
                return min(index, len(waiting) - 1), error
        return -1, None

    @property
    def _savepoint(self) -> str:
        return self._q["savepoint"]

    @property
    def _commit(self) -> str:
        return self._q["commit"]

    async def _wait(
        self, query: str, values: Sequence[Any], sqlstate: str, failure: Callable[[], BaseException]
    ) -> None:
        """Hold `query` for the next statement; `failure()` is what its `sqlstate` raises."""
        self._waiting.append((query, values, sqlstate, failure, self._segment))

    async def _send_waiting(self) -> None:
        """Send what waits, alone: what comes next runs outside a pipeline."""
        if self._waiting:
            await self._run_pipelined(None, None)

    def hold_member(self) -> object | None:
        if self._segment == 0:  # not in a member's savepoint
            return None
        self._held.add(self._segment)
        return self._segment

    def refusal(self, key: object) -> BaseException | None:
        assert isinstance(key, int)
        return self._refused.get(key)

    async def flush(self) -> None:
        await self._send_waiting()

    async def write(self, name: str, values: Sequence[Any], refused: Callable[[], BaseException]) -> None:
        await self._wait(self._q[name], values, _NOTHING_WRITTEN, refused)

    async def check(self, name: str, values: Sequence[Any], failure: Callable[[], BaseException]) -> None:
        await self._wait(self._q[name], values, _FENCE_FAILED, failure)

    async def execute(self, name: str, params: Params | None = None) -> int:
        if name == "savepoint":
            # A group member's (store/group_commit): it goes with the member's first statement, in
            # the same pipeline, not in a round trip of its own. It cannot fail alone: the
            # transaction it is in is sound, or the next statement says it is not.
            self._segment += 1
            self._waiting.append((self._savepoint, params, None, None, self._segment))
            return 0
        return (await self._run(name, params)).rowcount

    async def execute_many(self, name: str, params: Sequence[Params]) -> None:
        if not params:
            return
        await self._send_waiting()  # executemany runs a pipeline of its own
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
        self._waiting = [(self._q["begin_write" if write else "begin_read"], None, None, None, 0)]
        self._segment = 0
        self._held, self._refused = set(), {}

    async def commit(self) -> None:
        if len(self._waiting) == 1 and self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            self._waiting = []  # only BEGIN waits: nothing was sent, no transaction to end
            return
        try:
            # With what waits: a journaled write's one round trip.
            if self._waiting:
                await self._run_pipelined(self._commit, None)
            else:
                await self._run("commit", None)
        except BaseException:
            await self.rollback()
            raise

    async def rollback(self) -> None:
        self._waiting = []
        if self.conn.closed or self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return
        try:
            await self.conn.execute(self._q["rollback"])
        except psycopg.Error:
            await self.conn.close()  # the pool replaces a broken connection

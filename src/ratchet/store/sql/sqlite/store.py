"""The SQLite store: one file, WAL, safe for several processes on one machine.

Writes run in ``BEGIN IMMEDIATE`` transactions, so a writer takes the file's
write lock before reading what it will change; that lock also serializes
everything `Driver.lock` would. Statements run on the event loop's thread: a
WAL commit without a sync takes microseconds, less than a hop to a worker
thread would. Waiting for another process's write lock, though, happens in
short slices with ``await asyncio.sleep`` in between, so a busy file never
freezes the loop (heartbeats keep beating).

A transaction of one write (the journal's intent, or its outcome: `_begin_alone`)
is that write alone, one statement with no ``BEGIN IMMEDIATE`` or ``COMMIT``
around it: SQLite makes a single statement atomic, takes the write lock
for it as ``BEGIN IMMEDIATE`` would (waited for in the same slices), and
commits it as it ends. The lease's check rides in the statement
(``<write>_if_check_fence``), so a stale fence writes nothing.

``durability="normal"`` (``synchronous=NORMAL``) survives a killed process: a
commit is in the WAL before it returns. ``durability="full"`` also syncs the
WAL on every commit, so it survives a power loss, at the cost of an fsync per
commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ....errors import StoreError, StoreReadOnly, StoreUnavailable
from ...base import StateStore
from .. import catalogue
from ..driver import Driver, Params, Row
from ..ops import SqlOps
from ..transaction import SqlTransaction
from .errors import primary_code, read_only_error, read_only_reason, store_error
from .schema import check_file, prepare

__all__ = ["SqliteStore"]

DIALECT = "sqlite"
# What SQLite says when it cannot write the file, or cannot make the files it keeps beside it.
_READ_ONLY_CODES = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN}
# Every statement of the catalogue stays prepared once its connection ran it: sqlite3 keeps the
# newest 128 by default, fewer than the catalogue holds, and preparing a journal write again
# costs ~90 us of CPU, three times its running (bench/HISTORY.md, "Issue 34"). The margin is
# for what runs outside the catalogue (pragmas, migrations).
_PREPARED = len(catalogue.queries(DIALECT)) + 64
_ALONE, _WROTE = 1, 2  # SqliteDriver._alone: a transaction of one write, before and after it


class SqliteStore(StateStore):
    """The store of a ``sqlite:///PATH`` URL."""

    def __init__(
        self,
        path: str | Path,
        *,
        durability: str = "normal",
        create: bool = True,
        lock_timeout: float = 30.0,
        integrity_check: bool = True,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', not {durability!r}")
        super().__init__()
        self.path = Path(path)
        self.url = f"sqlite:///{path}"
        self.durability = durability
        self.create = create
        self.lock_timeout = lock_timeout
        self.read_only: str | None = None
        """Why the database can only be read, once `open` found it so (writes raise `StoreReadOnly`)."""
        self.integrity_check = integrity_check
        self._open: SqlTransaction | None = None  # the one connection's, reused
        self._driver: SqliteDriver  # its driver, once open
        # Sharing commits pays where a commit costs an fsync (durability=full); at `normal` a
        # commit costs about what serving a group's member does, and 1,000 tasks resuming at
        # once were 2.8x slower with it (docs/benchmarks.md, "Group commit").
        self.share_commits(durability == "full")

    async def open(self) -> None:
        check_file(self.path, create=self.create)
        try:
            conn = self._connect(self.path)
        except sqlite3.Error as exc:
            reason = read_only_reason(self.path)
            if reason is None or primary_code(exc) not in _READ_ONLY_CODES:
                raise store_error(self.path, exc) from None
            if not self.path.exists():
                raise StoreReadOnly(f"cannot create the database at {self.path}: {reason}") from None
            conn = self._connect_read_only(reason)
            self.read_only = reason
        driver = self._driver = SqliteDriver(
            conn, self.path, lock_timeout=self.lock_timeout, read_only=self.read_only
        )
        self._open = SqlTransaction(driver, SqlOps(driver))

    def _connect(self, target: str | Path, *, read_only: bool = False) -> sqlite3.Connection:
        """A connection to the database, its schema checked (and migrated, unless `read_only`)."""
        conn = sqlite3.connect(
            target,
            isolation_level=None,
            check_same_thread=False,
            uri=isinstance(target, str),
            cached_statements=_PREPARED,
        )
        try:
            prepare(
                conn,
                self.path,
                durability=self.durability,
                lock_timeout=self.lock_timeout,
                read_only=read_only,
                integrity_check=self.integrity_check,
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_read_only(self, reason: str) -> sqlite3.Connection:
        """A reading connection to a database that cannot be written (SQLite refused the usual one).

        ``mode=ro`` reads the write-ahead log too, but needs its ``-shm`` file
        or the right to make one; without either, ``immutable=1`` reads the
        file alone, which is right only when no log holds changes not yet in it
        and no one writes it meanwhile (no one can on a read-only file system;
        with a ``-wal`` file beside it, a writer may be at work, and it is not done).
        """
        uri = "file:" + urllib.parse.quote(str(self.path.absolute()))
        try:
            return self._connect(uri + "?mode=ro", read_only=True)
        except sqlite3.Error as exc:
            wal = self.path.with_name(self.path.name + "-wal")
            if primary_code(exc) not in _READ_ONLY_CODES or wal.exists():
                raise read_only_error(self.path, f"{reason}; SQLite cannot read it so: {exc}") from None
        try:
            return self._connect(uri + "?immutable=1", read_only=True)
        except sqlite3.Error as exc:
            raise store_error(self.path, exc) from None

    async def close(self) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            assert isinstance(opened.driver, SqliteDriver)
            opened.driver.conn.close()

    async def _begin(self, *, write: bool) -> SqlTransaction:
        opened = self._open
        if opened is None:
            raise StoreError(f"the store {self.url} is not open")
        opened.ops.touched = set()
        # SqlTransaction.begin inlined (this is every call's path), less the give-back:
        # the connection is the store's own.
        await opened.driver.begin(write=write)
        return opened

    async def _begin_alone(self) -> SqlTransaction:
        opened = self._open
        if opened is None:
            raise StoreError(f"the store {self.url} is not open")
        opened.ops.touched = set()
        self._driver.begin_alone()
        return opened


class SqliteDriver(Driver):
    """The store's one connection (its transactions take turns through the store's gate)."""

    atomic_statements = True  # a failed statement is rolled back alone (SQLite's ON CONFLICT ABORT)

    def __init__(
        self, conn: sqlite3.Connection, path: Path, *, lock_timeout: float, read_only: str | None = None
    ) -> None:
        self.conn = conn
        self.path = path
        self.lock_timeout = lock_timeout
        self.read_only = read_only
        self._q = catalogue.queries(DIALECT)
        # One cursor for every statement: results are read before the next one runs (the
        # store's transactions take turns), and a cursor made per statement costs its allocation.
        self._cursor = conn.cursor()
        # A check waits here for the transaction's next statement: a journal write that has a
        # variant "<write>_if_<check>" carries it (the fence and the write in one statement);
        # any other statement, or the commit, runs it first.
        self._pending: tuple[str, Sequence[Any], Callable[[], BaseException]] | None = None
        self._folded = {tuple(name.split("_if_")): sql for name, sql in self._q.items() if "_if_" in name}
        # A transaction begun alone (`begin_alone`): _ALONE until its write runs, as a statement of its
        # own; _WROTE after it. Any other statement first begins the transaction it was spared.
        self._alone = 0

    def _run_pending(self) -> None:
        pending, self._pending = self._pending, None
        assert pending is not None
        name, values, failure = pending
        try:
            row = self._cursor.execute(self._q[name], values).fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        if row is None or not row[0]:
            raise failure()

    def _error(self, exc: sqlite3.Error) -> StoreError:
        return store_error(self.path, exc)

    # Each query method runs its statement itself, not through a shared helper:
    # they are the store's hottest lines, and a call costs as much as a statement.

    def _run(self, name: str, params: Params | None) -> sqlite3.Cursor:
        if self._pending is not None:
            self._run_pending()
        try:
            return self.conn.execute(self._q[name], params or {})
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def execute(self, name: str, params: Params | None = None) -> int:
        if self._alone:
            await self._leave_alone()
        if self._pending is not None:
            self._run_pending()
        try:
            return self._cursor.execute(self._q[name], params or {}).rowcount
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def write(self, name: str, values: Sequence[Any], refused: Callable[[], BaseException]) -> None:
        if self._alone:
            await self._write_alone(name, values, refused)
            return
        pending = self._pending
        if pending is not None:
            folded = self._folded.get((name, pending[0]))
            if folded is None:
                self._run_pending()
            else:
                try:
                    written = self._cursor.execute(folded, (*values, *pending[1])).rowcount
                except sqlite3.Error as exc:
                    raise self._error(exc) from exc
                if written == 0:  # the check failed, or the write was refused: the check says which
                    self._run_pending()
                    raise refused()
                self._pending = None
                return
        try:
            written = self._cursor.execute(self._q[name], values).rowcount
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        if written == 0:
            raise refused()

    async def check(self, name: str, values: Sequence[Any], failure: Callable[[], BaseException]) -> None:
        # Run with the next statement (Driver.check allows it): the write it guards may carry it.
        if self._pending is not None:
            self._run_pending()
        self._pending = (name, values, failure)

    async def execute_many(self, name: str, params: Sequence[Params]) -> None:
        if self._alone:
            await self._leave_alone()
        if self._pending is not None:
            self._run_pending()
        try:
            self.conn.executemany(self._q[name], params)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def one(self, name: str, params: Params | None = None) -> Row | None:
        if self._alone:
            await self._leave_alone()
        if self._pending is not None:
            self._run_pending()
        try:
            row: Row | None = self._cursor.execute(self._q[name], params or {}).fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        return row

    async def all(self, name: str, params: Params | None = None) -> list[Row]:
        if self._alone:
            await self._leave_alone()
        return self._run(name, params).fetchall()

    async def lock(self, key: str) -> None:
        """Nothing to take: ``BEGIN IMMEDIATE`` already holds the whole file's write lock."""

    async def begin(self, *, write: bool) -> None:
        self._pending = None
        self._alone = 0
        if self.conn.in_transaction:  # a rollback that failed left it open
            await self.rollback()
        if not write:
            self._run("begin_read", None)
            return
        if self.read_only is not None:
            raise read_only_error(self.path, self.read_only)
        await self._when_unlocked(self._q["begin_write"], ())

    def begin_alone(self) -> None:
        """Begin a transaction that will hold one write: nothing runs until it does (`_write_alone`)."""
        self._pending = None
        if self.conn.in_transaction:  # a rollback that failed left it open
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute(self._q["rollback"])
        if self.read_only is not None:
            raise read_only_error(self.path, self.read_only)
        self._alone = _ALONE

    async def _write_alone(
        self, name: str, values: Sequence[Any], refused: Callable[[], BaseException]
    ) -> None:
        """The transaction's one write, as a statement of its own: its fence folded in, or none to check."""
        pending = self._pending
        if pending is None:
            sql, params = self._q[name], values
        else:
            folded = self._folded.get((name, pending[0]))
            if folded is None:  # the check cannot ride in it: a transaction holds both
                await self._leave_alone()
                await self.write(name, values, refused)
                return
            sql, params = folded, (*values, *pending[1])
        try:  # most writes find the file free: the wait below is a coroutine call they are spared
            written = self._cursor.execute(sql, params).rowcount
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise self._error(exc) from exc
            written = (await self._when_unlocked(sql, params)).rowcount
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        self._alone = _WROTE
        if written == 0:  # nothing was written: the check (run now, alone) says whether the fence is why
            if pending is not None:
                self._run_pending()
            raise refused()
        self._pending = None

    async def _leave_alone(self) -> None:
        """A statement other than the one write: begin the transaction after all, if nothing was written."""
        if self._alone == _WROTE:
            raise StoreError("a transaction of one write ran a statement after it (its write is committed)")
        self._alone = 0
        await self._when_unlocked(self._q["begin_write"], ())  # the check still waits for the next statement

    async def _when_unlocked(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        """Run a statement that takes the write lock, waiting for another process's in slices."""
        deadline = None
        pause = 0.001
        while True:
            try:
                return self._cursor.execute(sql, params)
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise self._error(exc) from exc
                if deadline is None:  # read only once it is needed: most transactions begin at once
                    deadline = time.monotonic() + self.lock_timeout
                elif time.monotonic() > deadline:
                    raise StoreUnavailable(
                        f"{self.path} stayed locked by another process for {self.lock_timeout:g} s"
                    ) from exc
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    async def flush(self) -> None:
        if self._pending is not None:  # a group commit's member ends: its check fails in its own turn
            self._run_pending()

    async def commit(self) -> None:
        if self._alone:  # its write committed itself, or there was none: a check left waiting runs alone
            self._alone = 0
            if self._pending is not None:
                self._run_pending()
            return
        if self._pending is not None:  # a check no statement ran after: it holds, or nothing is kept
            try:
                self._run_pending()
            except BaseException:
                await self.rollback()
                raise
        try:
            self._cursor.execute(self._q["commit"])
        except sqlite3.Error as exc:
            await self.rollback()
            raise self._error(exc) from exc

    async def rollback(self) -> None:
        # SQLite has already rolled back after some errors (a full disk, an I/O
        # error); a second ROLLBACK would fail with "no transaction is active".
        self._pending = None
        self._alone = 0
        if not self.conn.in_transaction:
            return
        with contextlib.suppress(sqlite3.Error):  # the error that led here is the one to report
            self.conn.execute(self._q["rollback"])  # (and `begin` tries again if this one failed)


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock (try again), not for good."""
    return "locked" in str(exc) or "busy" in str(exc)

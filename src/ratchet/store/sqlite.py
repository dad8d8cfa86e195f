"""The SQLite store: one file, WAL, safe for several processes on one machine.

Writes run in ``BEGIN IMMEDIATE`` transactions, so a writer takes the file's
write lock before reading what it will change; that lock also serializes
everything `Driver.lock` would. Statements run on the event loop's thread: a
WAL commit without a sync takes microseconds, less than a hop to a worker
thread would. Waiting for another process's write lock, though, happens in
short slices with ``await asyncio.sleep`` in between, so a busy file never
freezes the loop (heartbeats keep beating).

``durability="normal"`` (``synchronous=NORMAL``) survives a killed process: a
commit is in the WAL before it returns. ``durability="full"`` also syncs the
WAL on every commit, so it survives a power loss, at the cost of an fsync per
commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import DuplicateRecord, StoreError
from . import catalogue
from .base import StateStore
from .driver import Driver, Params, Row
from .sql import SqlOps
from .sql_transaction import SqlTransaction
from .sqlite_schema import check_file, migrate, prepare

__all__ = ["SqliteStore", "migrate"]

DIALECT = "sqlite"


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
        self.integrity_check = integrity_check
        self._open: SqlTransaction | None = None  # the one connection's, reused

    async def open(self) -> None:
        check_file(self.path, create=self.create)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            prepare(
                conn,
                self.path,
                durability=self.durability,
                lock_timeout=self.lock_timeout,
                integrity_check=self.integrity_check,
            )
        except BaseException:
            conn.close()
            raise
        driver = SqliteDriver(conn, self.path, lock_timeout=self.lock_timeout)
        self._open = SqlTransaction(driver, SqlOps(driver))

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


class SqliteDriver(Driver):
    """The store's one connection (its transactions take turns through the store's gate)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, *, lock_timeout: float) -> None:
        self.conn = conn
        self.path = path
        self.lock_timeout = lock_timeout
        self._q = catalogue.queries(DIALECT)

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """The store error for a driver error: the one place they are translated."""
        if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc):
            return DuplicateRecord(f"SQLite {self.path}: {exc}")
        return StoreError(f"SQLite error on {self.path}: {exc}")

    # Each query method runs its statement itself, not through a shared helper:
    # they are the store's hottest lines, and a call costs as much as a statement.

    def _run(self, name: str, params: Params | None) -> sqlite3.Cursor:
        try:
            return self.conn.execute(self._q[name], params or {})
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def execute(self, name: str, params: Params | None = None) -> int:
        try:
            return self.conn.execute(self._q[name], params or {}).rowcount
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def execute_many(self, name: str, params: Sequence[Params]) -> None:
        try:
            self.conn.executemany(self._q[name], params)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def one(self, name: str, params: Params | None = None) -> Row | None:
        try:
            row: Row | None = self.conn.execute(self._q[name], params or {}).fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        return row

    async def all(self, name: str, params: Params | None = None) -> list[Row]:
        return self._run(name, params).fetchall()

    async def lock(self, key: str) -> None:
        """Nothing to take: ``BEGIN IMMEDIATE`` already holds the whole file's write lock."""

    async def begin(self, *, write: bool) -> None:
        if not write:
            self._run("begin_read", None)
            return
        deadline = time.monotonic() + self.lock_timeout
        pause = 0.001
        while True:
            try:
                self.conn.execute(self._q["begin_write"])
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise self._error(exc) from exc
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} stayed locked by another process for {self.lock_timeout:g} s"
                    ) from exc
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    async def commit(self) -> None:
        try:
            self.conn.execute(self._q["commit"])
        except sqlite3.Error as exc:
            await self.rollback()
            raise StoreError(f"SQLite could not commit to {self.path}: {exc}") from exc

    async def rollback(self) -> None:
        # SQLite has already rolled back after some errors (a full disk, an I/O
        # error); a second ROLLBACK would fail with "no transaction is active".
        if self.conn.in_transaction:
            self._run("rollback", None)

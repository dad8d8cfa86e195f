"""The database `ratchet langgraph import` copies from: a SqliteSaver file or a PostgresSaver database.

The checkpoints and writes are read by LangGraph's own saver (`get_tuple`),
so their format is the saver's to decode. Two things its API does not give
are read from its tables, as plain columns: the keys of every checkpoint (to
copy a thread oldest first, one checkpoint at a time, whatever its size) and
each pending write's index and task path (a `get_tuple` gives only the task,
channel and value of each, in LangGraph's order of writes, which is the
order of those columns).

Nothing is written to the source: the SQLite file is opened read-only and
the saver's `setup` (which would create tables and change the journal mode)
is never run; a PostgreSQL source is only read.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from langgraph.checkpoint.base import BaseCheckpointSaver

from ...errors import InputError, MissingExtra
from ...store import redact_url

__all__ = ["CheckpointKey", "Source", "WriteKey", "open_source"]

_SQLITE_TABLES = {"checkpoints", "writes"}
_POSTGRES_TABLES = {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"}


@dataclass(frozen=True, slots=True)
class CheckpointKey:
    """Where a checkpoint is in the source."""

    thread_id: str
    ns: str
    checkpoint_id: str


@dataclass(frozen=True, slots=True)
class WriteKey:
    """What the source keeps of a pending write besides its value."""

    task_id: str
    idx: int
    task_path: str
    channel: str


class Source(Protocol):
    """An open source database: its saver, and the columns its saver's API does not give."""

    saver: BaseCheckpointSaver[Any]

    def keys(self) -> list[CheckpointKey]:
        """Every checkpoint, by thread, then namespace, then id (the order they were made)."""
        ...

    def write_keys(self, key: CheckpointKey) -> list[WriteKey]:
        """The pending writes of a checkpoint, in no particular order."""
        ...


class NotASource(InputError):
    """The source is not a LangGraph checkpoint database this command can read."""


@contextlib.contextmanager
def open_source(url: str) -> Iterator[Source]:
    """Open the source database `url` names, read-only: ``sqlite:///PATH`` or ``postgresql://...``.

    Raises:
        NotASource: no such file or database, not a LangGraph saver's database, or an unknown scheme.
        MissingExtra: the saver's package is not installed.
    """
    scheme = url.partition("://")[0] if "://" in url else ""
    if scheme == "sqlite":
        with _sqlite(url) as source:
            yield source
    elif scheme in ("postgresql", "postgres"):
        with _postgres(url) as source:
            yield source
    else:
        raise NotASource(
            f"cannot import from {redact_url(url)!r}: give sqlite:///PATH (a SqliteSaver file) "
            "or postgresql://... (a PostgresSaver database)"
        )


# --------------------------------------------------------------------------- SqliteSaver


class _SqliteSource:
    def __init__(self, saver: Any, conn: sqlite3.Connection, task_paths: bool) -> None:
        self.saver = saver
        self._conn = conn
        self._task_path = "task_path" if task_paths else "''"

    def keys(self) -> list[CheckpointKey]:
        query = (
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints"
            " ORDER BY thread_id, checkpoint_ns, checkpoint_id"
        )
        return [CheckpointKey(str(t), n, c) for t, n, c in self._conn.execute(query)]

    def write_keys(self, key: CheckpointKey) -> list[WriteKey]:
        query = (
            f"SELECT task_id, idx, {self._task_path}, channel FROM writes"
            " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
        )
        rows = self._conn.execute(query, (key.thread_id, key.ns, key.checkpoint_id))
        return [WriteKey(*row) for row in rows]


@contextlib.contextmanager
def _sqlite(url: str) -> Iterator[Source]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise MissingExtra("importing a SqliteSaver database", "SqliteSaver", "langgraph-import") from None
    named = url.removeprefix("sqlite://").partition("?")[0]
    path = Path(named[1:])  # as Ratchet's own URLs: sqlite:///relative.db, sqlite:////absolute.db
    if len(named) < 2 or not path.is_file():
        raise NotASource(f"no SQLite file at {str(path)!r}: give the SqliteSaver database as sqlite:///PATH")
    conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, check_same_thread=False)
    try:
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            columns = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
        except sqlite3.DatabaseError as exc:
            raise NotASource(f"{str(path)!r} is not a SQLite database ({exc})") from None
        if not tables >= _SQLITE_TABLES:
            raise NotASource(
                f"{str(path)!r} is not a SqliteSaver database (no checkpoints and writes tables)"
            )
        saver = SqliteSaver(conn)
        # Read-only: the tables are there, so the saver's setup (CREATE TABLE, the journal mode) is skipped.
        saver.is_setup = True
        saver._has_task_path = "task_path" in columns  # as its setup finds out (a file older than the column)
        yield _SqliteSource(saver, conn, "task_path" in columns)
    finally:
        conn.close()


# --------------------------------------------------------------------------- PostgresSaver


class _PostgresSource:
    def __init__(self, saver: Any, conn: Any) -> None:
        self.saver = saver
        self._conn = conn

    def keys(self) -> list[CheckpointKey]:
        query = (
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints"
            " ORDER BY thread_id, checkpoint_ns, checkpoint_id"
        )
        with self._conn.cursor() as cur:
            return [
                CheckpointKey(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"])
                for r in cur.execute(query)
            ]

    def write_keys(self, key: CheckpointKey) -> list[WriteKey]:
        query = (
            "SELECT task_id, idx, task_path, channel FROM checkpoint_writes"
            " WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
        )
        with self._conn.cursor() as cur:
            rows = cur.execute(query, (key.thread_id, key.ns, key.checkpoint_id))
            return [WriteKey(r["task_id"], r["idx"], r["task_path"], r["channel"]) for r in rows]


@contextlib.contextmanager
def _postgres(url: str) -> Iterator[Source]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.base import MIGRATIONS
        from psycopg.rows import dict_row
    except ImportError:
        raise MissingExtra(
            "importing a PostgresSaver database", "PostgresSaver", "langgraph-import"
        ) from None
    shown = redact_url(url)
    try:
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    except psycopg.Error as exc:
        problem = " ".join(str(exc).split())
        raise NotASource(f"cannot connect to the PostgresSaver database {shown!r}: {problem}") from None
    with conn:
        query = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        tables = {row["tablename"] for row in conn.execute(query)}
        if not tables >= _POSTGRES_TABLES:
            raise NotASource(f"{shown!r} is not a PostgresSaver database (no checkpoints tables)")
        row = conn.execute("SELECT max(v) AS v FROM checkpoint_migrations").fetchone()
        if row is None or row["v"] is None or row["v"] < len(MIGRATIONS) - 1:
            raise NotASource(
                f"{shown!r} was made by an older langgraph-checkpoint-postgres: "
                "run PostgresSaver.setup() on it once with the installed version, then import"
            )
        yield _PostgresSource(PostgresSaver(conn), conn)

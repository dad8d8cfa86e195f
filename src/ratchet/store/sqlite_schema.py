"""Getting an SQLite file ready: refusing what is not ours, pragmas, migrations."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from ..errors import (
    NotARatchetDatabase,
    SchemaTooNew,
    StoreError,
    StoreNotFound,
    StoreReadOnly,
    StoreUnavailable,
)
from ..model import utcnow
from . import catalogue, rows
from .sqlite_errors import primary_code

__all__ = ["check_file", "migrate", "prepare"]

_HEADER = b"SQLite format 3\x00"
_NOT_A_DATABASE = {sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT}


def check_file(where: Path, *, create: bool) -> None:
    """Refuse, before SQLite touches it, a path that is not (and may not become) a Ratchet database.

    Raises:
        StoreError: the directory does not exist.
        StoreUnavailable: the file cannot be read (no permission).
        StoreNotFound: no file, and `create` is false.
        NotARatchetDatabase: a directory, a file that is not SQLite, or an
            empty file that may not be created into.
    """
    if not where.parent.is_dir():
        raise StoreError(f"the directory {where.parent} does not exist; create it or choose another path")
    if where.is_dir():
        raise NotARatchetDatabase(f"{where} is a directory, not a database file")
    if not where.exists():
        if not create:
            raise StoreNotFound(
                f"no Ratchet database at {where}; `ratchet migrate --store sqlite:///{where}` creates one"
            )
        return
    try:
        with where.open("rb") as file:
            header = file.read(len(_HEADER))
    except OSError as exc:
        raise StoreUnavailable(f"cannot read the database at {where}: {exc.strerror}") from None
    if header and header != _HEADER:
        raise NotARatchetDatabase(
            f"{where} is not a Ratchet database (not an SQLite file); point --store at a Ratchet database"
        )
    if not header and not create:
        raise NotARatchetDatabase(f"{where} is an empty file, not a Ratchet database")


def prepare(
    conn: sqlite3.Connection, where: Path, *, durability: str, lock_timeout: float, read_only: bool = False
) -> None:
    """Check the schema is Ratchet's and not newer, set the pragmas, migrate if behind.

    Nothing is written to a database that is not Ratchet's or is too new, nor
    (`read_only`) to one opened only for reading. SQLite's own errors (a file
    it cannot open, a full disk) are raised as they are, for the caller to translate.
    """
    queries = catalogue.queries("sqlite")
    try:
        tables = {name for (name,) in conn.execute(queries["list_tables"])}
    except sqlite3.DatabaseError as exc:
        if primary_code(exc) not in _NOT_A_DATABASE:
            raise  # it could not be read (opened, locked): that says nothing of what it holds
        raise NotARatchetDatabase(f"{where} is not a Ratchet database ({exc})") from exc
    if tables and "ratchet_schema_version" not in tables:
        raise NotARatchetDatabase(f"{where} is an SQLite database of something else, not a Ratchet database")
    latest = catalogue.latest_version("sqlite")
    found = conn.execute(queries["schema_version"]).fetchone()[0] if tables else 0
    if found > latest:
        raise SchemaTooNew(found, latest)
    conn.execute(f"PRAGMA busy_timeout = {int(lock_timeout * 1000)}")
    if read_only:
        if found < latest:
            raise StoreReadOnly(
                f"the database at {where} is read-only and needs migrating to schema version {latest}; "
                "make it writable and open it again"
            )
        return
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {durability.upper()}")
    if found < latest:
        migrate(conn)
    # From here on, waits for the write lock happen in slices (SqliteStore._begin).
    conn.execute("PRAGMA busy_timeout = 20")


def migrate(conn: sqlite3.Connection, *, fresh_from_schema: bool = True) -> int:
    """Bring the database on `conn` to the latest schema version; return that version.

    A database with no schema yet is made from ``schema.sql`` in one go
    (or, with ``fresh_from_schema=False``, by running every migration: the
    two must give the same schema). Runs in one ``BEGIN IMMEDIATE``
    transaction, so processes opening one file at once migrate it once.
    """
    queries = catalogue.queries("sqlite")
    latest = catalogue.latest_version("sqlite")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(queries["create_version_table"])
        found = conn.execute(queries["schema_version"]).fetchone()[0]
        if found > latest:
            raise SchemaTooNew(found, latest)
        if found == 0 and fresh_from_schema:
            _run_script(conn, catalogue.schema("sqlite"))
        else:
            for migration in catalogue.migrations("sqlite")[found:]:
                _run_script(conn, migration.sql)
        applied_at = rows.to_micros(utcnow())
        for version in range(found + 1, latest + 1):
            conn.execute(queries["record_version"], {"version": version, "applied_at": applied_at})
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite already rolled back after some errors (a full disk)
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return latest


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run each statement of `script` inside the open transaction (executescript would commit)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        if not statement and (not line.strip() or line.lstrip().startswith("--")):
            continue
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement in a schema script: {statement[:80]!r}")

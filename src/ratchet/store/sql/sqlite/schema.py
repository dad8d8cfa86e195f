"""Getting an SQLite file ready: refusing what is not ours or is damaged, pragmas, migrations.

Opening an existing file runs ``PRAGMA quick_check`` before anything is
written to it: a file whose pages are damaged is refused (unless the caller
opens it anyway) rather than written to. It reads every page: about 60 ms per
100 MB from the page cache, as long as reading the file takes when it is not
cached (docs/stores.md).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from ....errors import (
    DamagedDatabase,
    NotARatchetDatabase,
    SchemaTooNew,
    StoreError,
    StoreNotFound,
    StoreReadOnly,
    StoreUnavailable,
)
from ....records import utcnow
from .. import catalogue, rows
from ..task_rows import SEARCH_VERSION, search_params
from .errors import primary_code

__all__ = ["check_file", "check_integrity", "migrate", "prepare"]

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
    conn: sqlite3.Connection,
    where: Path,
    *,
    durability: str,
    lock_timeout: float,
    read_only: bool = False,
    integrity_check: bool = True,
) -> None:
    """Check the file is whole (unless `integrity_check` is false), the schema is Ratchet's and
    not newer; set the pragmas, migrate if behind.

    Nothing is written to a database that is not Ratchet's, is damaged or is too new, nor
    (`read_only`) to one opened only for reading. SQLite's own errors (a file it cannot
    open, a full disk) are raised as they are, for the caller to translate.
    """
    queries = catalogue.queries("sqlite")
    try:
        tables = {name for (name,) in conn.execute(queries["list_tables"])}
    except sqlite3.DatabaseError as exc:
        if "malformed" in str(exc):
            raise _damaged(where, str(exc), openable=False) from exc
        if primary_code(exc) not in _NOT_A_DATABASE:
            raise  # it could not be read (opened, locked): that says nothing of what it holds
        raise NotARatchetDatabase(f"{where} is not a Ratchet database ({exc})") from exc
    if tables and not _is_ratchets(tables):
        raise NotARatchetDatabase(f"{where} is an SQLite database of something else, not a Ratchet database")
    if tables and integrity_check:
        check_integrity(conn, where)
    latest = catalogue.latest_version("sqlite")
    found = _found_version(conn, where)
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
        found = _found_version(conn, conn.execute("PRAGMA database_list").fetchone()[2])
        if found > latest:
            raise SchemaTooNew(found, latest)
        conn.execute(queries["create_version_table"])
        if found == 0 and fresh_from_schema:
            _run_script(conn, catalogue.schema("sqlite"))
        else:
            for migration in catalogue.migrations("sqlite")[found:]:
                _run_script(conn, migration.sql)
            if 0 < found < SEARCH_VERSION:
                _index_stored_tasks(conn)
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


def _index_stored_tasks(conn: sqlite3.Connection) -> None:
    """Put the search words of the tasks stored before the search index, a batch of records at a time."""
    queries = catalogue.queries("sqlite")
    after = ""
    while True:
        found = conn.execute(queries["task_records_after"], {"after": after, "limit": 500}).fetchall()
        if not found:
            return
        conn.executemany(queries["put_task_words"], search_params(found))
        after = found[-1][0]


def check_integrity(conn: sqlite3.Connection, where: Path) -> None:
    """Run SQLite's quick integrity check on the file.

    Raises:
        DamagedDatabase: the check found a damaged page or index (or could not read the file).
    """
    try:
        (verdict,) = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        verdict = str(exc)
    if verdict != "ok":
        raise _damaged(where, verdict, openable=True)


def _damaged(where: Path, verdict: str, *, openable: bool) -> DamagedDatabase:
    # The verdict opens with a "*** in database main ***" line; the damage is named after it.
    lines = [line.strip() for line in verdict.splitlines() if line.strip() and "***" not in line]
    found = ascii(lines[0])[1:-1] if lines else "no details"
    recover = f"back it up and recover what it holds with `sqlite3 {where} .recover | sqlite3 RECOVERED.db`"
    if not openable:  # not even its list of tables can be read: --force-open would not help
        return DamagedDatabase(f"the database at {where} is damaged ({found}); {recover}")
    return DamagedDatabase(
        f"the database at {where} fails its integrity check ({found}); {recover}, "
        "or pass --force-open to open it anyway"
    )


def _is_ratchets(tables: set[str]) -> bool:
    return catalogue.VERSION_TABLE in tables or tables >= catalogue.RATCHET_TABLES


def _found_version(conn: sqlite3.Connection, where: object) -> int:
    """The schema version of the database on `conn`; 0 when it holds no schema yet.

    Raises:
        DamagedDatabase: it holds Ratchet's tables but its version table is
            missing, empty, or holds what is no version.
    """
    queries = catalogue.queries("sqlite")
    tables = {name for (name,) in conn.execute(queries["list_tables"])}
    if catalogue.VERSION_TABLE not in tables:
        if not tables:
            return 0
        raise catalogue.no_readable_version(
            f"the database at {where}", f"it has no {catalogue.VERSION_TABLE} table"
        )
    try:
        versions = [version for (version,) in conn.execute(queries["list_schema_versions"])]
    except sqlite3.DatabaseError as exc:
        raise catalogue.no_readable_version(
            f"the database at {where}", f"reading its {catalogue.VERSION_TABLE} table failed: {exc}"
        ) from exc
    problem = catalogue.version_problem(versions, tables)
    if problem is not None:
        raise catalogue.no_readable_version(f"the database at {where}", problem)
    return max(versions, default=0)


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

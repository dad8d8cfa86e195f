"""The SQLite schema: bringing a database to the current version."""

from __future__ import annotations

import sqlite3

from ..errors import SchemaTooNew
from ..model import utcnow
from . import catalogue, rows

__all__ = ["migrate"]


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

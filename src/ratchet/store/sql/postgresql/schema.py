"""Getting a PostgreSQL database ready: connecting, refusing what is not ours, migrations.

Opening checks the schema on a connection of its own before any pool exists,
so a wrong URL, a server that is down or a database that is missing each give
one line a person can act on. Migrations run in one transaction that first
takes an advisory lock (before any DDL: even ``CREATE TABLE IF NOT EXISTS``
races otherwise), so workers that start at once against an empty database
migrate it once; the others wait, then find it current.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ....errors import (
    NotARatchetDatabase,
    SchemaTooNew,
    StoreError,
    StoreFull,
    StoreNotFound,
    StoreReadOnly,
    StoreUnavailable,
)
from ....records import utcnow
from ...redact import hide_secrets, secrets_of
from .. import catalogue, rows
from ..task_rows import SEARCH_VERSION, search_params

__all__ = [
    "Target",
    "connect",
    "connection_error",
    "found_version",
    "keepalives",
    "migrate",
    "prepare",
    "server_error",
]

DIALECT = "postgresql"
_MISSING_DATABASE = re.compile(r'database "[^"]*" does not exist')
# SQLSTATEs after which the same work may succeed later: by class (a lost connection, resources
# run out, an operator's shutdown, a system error, a deadlock broken), and a few single codes
# (lock_not_available, query_canceled). 53100 (disk_full) and 25006 (read_only_sql_transaction)
# have classes of their own.
_UNAVAILABLE_CLASSES = {"08", "40", "53", "57", "58"}
_UNAVAILABLE_STATES = {"55P03", "57014"}


# A silent network loss (no FIN, no RST: a server's machine gone, a partition) is noticed by TCP
# keepalives within ~30 s, on an idle connection or one waiting for a reply alike.
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 15, "keepalives_interval": 5, "keepalives_count": 3}


def keepalives(conninfo: str) -> dict[str, Any]:
    """Ratchet's TCP keepalive options, but for those `conninfo` sets itself."""
    return {key: value for key, value in _KEEPALIVES.items() if key not in conninfo}


@dataclass(frozen=True)
class Target:
    """Where a connection string points, for messages (never the password)."""

    host: str
    port: str
    database: str
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)
    """The passwords of the connection string, hidden from every message (`hide`)."""

    @classmethod
    def of(cls, conninfo: str) -> Target:
        params = conninfo_to_dict(conninfo)
        user = params.get("user") or os.environ.get("PGUSER") or getpass.getuser()
        host = params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST") or ""
        secrets = [str(params[key]) for key in ("password", "sslpassword") if params.get(key)]
        return cls(
            host=str(host),
            port=str(params.get("port") or os.environ.get("PGPORT") or "5432"),
            database=str(params.get("dbname") or os.environ.get("PGDATABASE") or user),
            secrets=tuple(secrets + secrets_of(conninfo)),
        )

    def hide(self, text: str) -> str:
        """`text` (the server's or libpq's words) without the connection's passwords."""
        return hide_secrets(text, self.secrets)

    @property
    def server(self) -> str:
        if "," in self.host or "," in self.port:  # a multi-host URL: each host with its port
            hosts, ports = self.host.split(","), self.port.split(",")
            ports = ports if len(ports) == len(hosts) else ports[:1] * len(hosts)  # one port for all
            pairs = zip(hosts, ports, strict=True)
            return ",".join(f"{host or 'localhost'}:{port or '5432'}" for host, port in pairs)
        if not self.host or self.host.startswith("/"):
            return f"the local socket {self.host or 'directory'} (port {self.port})"
        return f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"database {self.database!r} on {self.server}"


def _reason(exc: psycopg.Error) -> str:
    """The server's or libpq's own words, on one line, without psycopg's preamble ."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    first = first.rpartition(" failed: ")[2] if " failed: " in first else first
    return first.removeprefix("FATAL:").strip()


def connection_error(target: Target, exc: psycopg.Error, *, lost: bool = False) -> StoreError:
    """The store error for a connection that could not be made (or, `lost`, broke while in use)."""
    reason = target.hide(_reason(exc))
    if lost:  # a server restart, a failover: what the transaction did is unknown if it was committing
        return StoreUnavailable(f"lost the connection to PostgreSQL {target}: {reason}")
    if _MISSING_DATABASE.search(reason):
        return StoreNotFound(
            f"PostgreSQL database {target.database!r} does not exist on {target.server}; "
            f"create it with `createdb {target.database}`"
        )
    return StoreUnavailable(f"cannot connect to PostgreSQL {target}: {reason}")


def server_error(target: Target, exc: psycopg.Error, doing: str = "") -> StoreError:
    """The store error for an error the server reported (`doing`: what Ratchet was doing, if worth saying)."""
    state = exc.sqlstate or ""
    reason = target.hide(exc.diag.message_primary or _reason(exc))
    where = f"PostgreSQL {target}" + (f": {doing}" if doing else "")
    if state == "53100":
        return StoreFull(f"{where}: the server's disk is full ({reason}); free space there, then try again")
    if state == "25006":
        return StoreReadOnly(
            f"{where}: the database is read-only ({reason}); commands that only read it work, "
            "make it writable (or point --store at the primary server) to run this one"
        )
    if state[:2] in _UNAVAILABLE_CLASSES or state in _UNAVAILABLE_STATES:
        return StoreUnavailable(f"{where}: {reason}")
    return StoreError(f"{where}: {reason}")


async def connect(conninfo: str, target: Target, **options: Any) -> psycopg.AsyncConnection[Any]:
    """Open one autocommit connection, or raise a `StoreError` saying why not."""
    try:
        return await psycopg.AsyncConnection.connect(conninfo, autocommit=True, **options)
    except psycopg.Error as exc:
        raise connection_error(target, exc) from None


async def _one(conn: psycopg.AsyncConnection[Any], name: str, params: dict[str, object] | None = None) -> Any:
    cursor = await conn.execute(catalogue.queries(DIALECT)[name], params)
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def _found_version(conn: psycopg.AsyncConnection[Any], target: Target) -> int:
    """The schema version of the database; 0 when it is empty.

    Raises:
        NotARatchetDatabase: it holds tables, none of them Ratchet's.
        DamagedDatabase: it holds Ratchet's tables but its version table is
            missing, empty, or holds what is no version.
    """
    queries = catalogue.queries(DIALECT)
    cursor = await conn.execute(queries["list_tables"])
    tables = {name for (name,) in await cursor.fetchall()}
    if not tables:
        return 0
    if catalogue.VERSION_TABLE not in tables:
        if tables >= catalogue.RATCHET_TABLES:
            raise catalogue.no_readable_version(
                f"PostgreSQL {target}", f"it has no {catalogue.VERSION_TABLE} table"
            )
        schema = await _one(conn, "current_schema")
        raise NotARatchetDatabase(
            f"PostgreSQL {target} holds tables of something else in schema {schema!r}, "
            "not a Ratchet database; point --store at an empty or a Ratchet database"
        )
    try:
        cursor = await conn.execute(queries["list_schema_versions"])
        versions = [version for (version,) in await cursor.fetchall()]
    except psycopg.Error as exc:
        why = f"reading its {catalogue.VERSION_TABLE} table failed: {_reason(exc)}"
        raise catalogue.no_readable_version(f"PostgreSQL {target}", why) from exc
    problem = catalogue.version_problem(versions, tables)
    if problem is not None:
        raise catalogue.no_readable_version(f"PostgreSQL {target}", problem)
    return max(versions, default=0)


async def found_version(conn: psycopg.AsyncConnection[Any], target: Target) -> int:
    """The schema version of the database on `conn`, written nowhere (a read replica's check)."""
    return await _found_version(conn, target)


async def prepare(conn: psycopg.AsyncConnection[Any], target: Target, *, create: bool) -> None:
    """Check the schema is Ratchet's and not newer; migrate it if behind.

    Nothing is written to a database that is not Ratchet's or is too new.

    Raises:
        StoreNotFound: the database is empty and `create` is false.
    """
    try:
        found = await _found_version(conn, target)
        latest = catalogue.latest_version(DIALECT)
        if found > latest:
            raise SchemaTooNew(found, latest)
        if found == 0 and not create:
            raise StoreNotFound(
                f"PostgreSQL {target} has no Ratchet schema yet; `ratchet migrate --store URL` creates it"
            )
        if found < latest:
            await migrate(conn, target)
    except psycopg.Error as exc:
        if conn.closed:
            raise connection_error(target, exc) from exc
        raise server_error(target, exc, "could not check or migrate the schema") from exc


async def migrate(
    conn: psycopg.AsyncConnection[Any], target: Target, *, fresh_from_schema: bool = True
) -> int:
    """Bring the database on `conn` (autocommit) to the latest schema version; return it.

    An empty database is made from ``schema.sql`` in one go (or, with
    ``fresh_from_schema=False``, by running every migration: the two must give
    the same schema). Everything happens in one transaction under an advisory
    lock, so processes migrating one database at once migrate it once.
    """
    queries = catalogue.queries(DIALECT)
    latest = catalogue.latest_version(DIALECT)
    await conn.execute(queries["begin_write"])
    try:
        await conn.execute(queries["lock_migrations"])
        found = await _found_version(conn, target)
        if found > latest:
            raise SchemaTooNew(found, latest)
        if found < latest:
            await conn.execute(queries["create_version_table"])
            if found == 0 and fresh_from_schema:
                await conn.execute(catalogue.schema(DIALECT))
            else:
                for migration in catalogue.migrations(DIALECT)[found:]:
                    await conn.execute(migration.sql)
                if 0 < found < SEARCH_VERSION:
                    await _index_stored_tasks(conn)
            applied_at = rows.to_micros(utcnow())
            for version in range(found + 1, latest + 1):
                await conn.execute(queries["record_version"], {"version": version, "applied_at": applied_at})
        await conn.execute(queries["commit"])
    except BaseException:
        if not conn.closed:
            with contextlib.suppress(psycopg.Error):  # the error that led here is the one to report
                await conn.execute(queries["rollback"])
        raise
    return latest


async def _index_stored_tasks(conn: psycopg.AsyncConnection[Any]) -> None:
    """Put the search words of the tasks stored before the search index, a batch of records at a time."""
    queries = catalogue.queries(DIALECT)
    after = ""
    while True:
        cursor = await conn.execute(queries["task_records_after"], {"after": after, "limit": 500})
        found = await cursor.fetchall()
        if not found:
            return
        async with conn.cursor() as writing:
            await writing.executemany(queries["put_task_words"], search_params(found))
        after = found[-1][0]

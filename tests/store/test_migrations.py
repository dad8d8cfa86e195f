"""The schema of each dialect, side by side: fresh equals migrated, migrating again
changes nothing, and foreign, newer and broken databases are refused untouched."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ratchet.errors import NotARatchetDatabase, SchemaTooNew, StoreError, StoreNotFound
from ratchet.store import open_store
from ratchet.store.sql import catalogue, rows
from ratchet.store.sql.postgresql.schema import Target
from ratchet.store.sql.postgresql.schema import migrate as migrate_postgresql
from ratchet.store.sql.sqlite.schema import migrate as migrate_sqlite

from ..helpers.cli import ratchet_command, ratchet_env
from ..helpers.pg import Cluster

LATEST = catalogue.latest_version("postgresql")
PROCESSES = 10
TIMEOUT = 120
TABLES = {
    "tasks", "steps", "operations", "messages", "events", "artifacts", "triggers", "checkpoints",
    "sessions", "leases", "lease_claims", "approvals", "ratchet_schema_version",
}  # fmt: skip

OPENER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from ratchet.store import open_store

    async def main(url, go):
        while not Path(go).exists():
            time.sleep(0.005)
        store = await open_store(url)
        try:
            print(await store.schema_version())
        finally:
            await store.close()

    print("ready", flush=True)
    asyncio.run(main(*sys.argv[1:]))
    """
)


# ------------------------------------------------------------------ SQLite helpers


def _schema_of(path: Path) -> dict[str, list[Any]]:
    """The schema as structure (columns, keys, indexes), not as the text that made it."""
    with sqlite3.connect(path) as conn:
        names = [
            (kind, name)
            for kind, name in conn.execute(
                "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        shape: dict[str, list[Any]] = {
            "objects": names,
            "without rowid": sorted(row[1] for row in conn.execute("PRAGMA table_list") if row[4]),
        }
        for kind, name in names:
            if kind == "table":
                shape[name] = conn.execute(f"PRAGMA table_info({name})").fetchall()
                shape[f"{name} indexes"] = [
                    (unique, conn.execute(f"PRAGMA index_info({index})").fetchall())
                    for _, index, unique, *_ in conn.execute(f"PRAGMA index_list({name})")
                ]
    return shape


def _fresh(path: Path, *, fresh_from_schema: bool) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert migrate_sqlite(conn, fresh_from_schema=fresh_from_schema) == catalogue.latest_version("sqlite")
    finally:
        conn.close()
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ PostgreSQL helpers


def _shape(url: str) -> dict[str, list[tuple[object, ...]]]:
    """The schema as structure (columns, constraints, indexes), not as the text that made it."""
    with psycopg.connect(url) as conn:
        return {
            "columns": conn.execute(
                "SELECT table_name, ordinal_position, column_name, data_type, is_nullable, "
                "column_default, is_identity, identity_generation FROM information_schema.columns "
                "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
            ).fetchall(),
            "constraints": conn.execute(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2"
            ).fetchall(),
            "indexes": conn.execute(
                "SELECT tablename, indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = current_schema() ORDER BY tablename, indexname"
            ).fetchall(),
        }


def _versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [v for (v,) in conn.execute("SELECT version FROM ratchet_schema_version ORDER BY version")]


async def _migrated(url: str, *, fresh_from_schema: bool) -> str:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        assert await migrate_postgresql(conn, Target.of(url), fresh_from_schema=fresh_from_schema) == LATEST
    return url


# ------------------------------------------------------------------ fresh equals migrated


def test_sqlite_fresh_schema_equals_migrated_schema(tmp_path: Path) -> None:
    from_schema = _schema_of(_fresh(tmp_path / "schema.db", fresh_from_schema=True))
    from_migrations = _schema_of(_fresh(tmp_path / "migrated.db", fresh_from_schema=False))
    assert from_schema == from_migrations
    assert {name for kind, name in from_schema["objects"] if kind == "table"} >= TABLES


async def test_postgresql_fresh_schema_equals_migrated_schema(postgres: Cluster) -> None:
    with postgres.database(empty=True) as fresh, postgres.database(empty=True) as stepwise:
        from_schema = _shape(await _migrated(fresh, fresh_from_schema=True))
        from_migrations = _shape(await _migrated(stepwise, fresh_from_schema=False))
        assert from_schema == from_migrations
        assert {table for table, *_ in from_schema["columns"]} >= TABLES
        assert _versions(fresh) == _versions(stepwise) == list(range(1, LATEST + 1))


async def test_both_dialects_have_the_same_schema_versions() -> None:
    postgres = [(m.version, m.title) for m in catalogue.migrations("postgresql")]
    assert postgres == [(m.version, m.title) for m in catalogue.migrations("sqlite")]


# ------------------------------------------------------------------ opening or migrating again


def test_sqlite_migrating_twice_changes_nothing(tmp_path: Path) -> None:
    path = _fresh(tmp_path / "r.db", fresh_from_schema=True)
    before = _schema_of(path)
    _fresh(path, fresh_from_schema=True)
    assert _schema_of(path) == before
    with sqlite3.connect(path) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM ratchet_schema_version")]
    assert versions == list(range(1, catalogue.latest_version("sqlite") + 1))


async def test_sqlite_store_reports_the_latest_version(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path}/r.db")
    try:
        assert await store.schema_version() == catalogue.latest_version("sqlite")
    finally:
        await store.close()


def test_a_query_made_of_blocks_joins_them_in_order() -> None:
    for dialect in ("sqlite", "postgresql"):
        queries = catalogue.queries(dialect)
        made = queries["task_rows_count+task_rows_from_name+task_rows_where_agent"]
        assert made == "\n".join(
            queries[name] for name in ("task_rows_count", "task_rows_from_name", "task_rows_where_agent")
        )
        with pytest.raises(KeyError):
            queries["task_rows_count+no_such_block"]
        with pytest.raises(KeyError):
            queries["no_such_query"]


def test_both_dialects_name_the_same_queries() -> None:
    """The store's operations are written once: every query name they use exists in both catalogues.

    PostgreSQL alone has the queries of its advisory locks, LISTEN, schema checks, pooler detection,
    read replicas and failover checks, and those of its partitioned history (``history_*``).
    """
    postgres_only = {
        "backend_pid", "current_schema", "listen_events", "listen_streams", "listen_tasks", "listen_triggers",
        "lock_migrations", "lock_sequence", "replica_staleness", "server_timeline",
    } | {name for name in catalogue.queries("postgresql") if name.startswith("history_")}  # fmt: skip
    # SQLite alone folds the fence into the journal's writes (PostgreSQL pipelines them instead).
    sqlite_only = {"record_op_started_if_check_fence", "record_op_finished_if_check_fence"}
    sqlite = set(catalogue.queries("sqlite")) - sqlite_only
    assert sqlite == set(catalogue.queries("postgresql")) - postgres_only


@pytest.mark.empty_database
async def test_postgresql_opening_again_changes_nothing(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        assert await store.schema_version() == LATEST
    before = _shape(postgres_url)
    async with await open_store(postgres_url) as store:
        assert await store.schema_version() == LATEST
    assert _shape(postgres_url) == before
    assert _versions(postgres_url) == list(range(1, LATEST + 1))


@pytest.mark.empty_database
def test_postgresql_processes_opening_an_empty_database_at_once_migrate_it_once(
    postgres_url: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, postgres_url, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    try:
        for opener in openers:
            assert opener.stdout is not None
            assert opener.stdout.readline().strip() == "ready", opener.communicate(timeout=TIMEOUT)[1]
        go.touch()
        outputs = [opener.communicate(timeout=TIMEOUT) for opener in openers]
    finally:
        for opener in openers:
            if opener.poll() is None:
                opener.kill()
                opener.wait()
    for opener, (stdout, stderr) in zip(openers, outputs, strict=True):
        assert opener.returncode == 0, stderr
        assert stdout.strip() == str(LATEST)
    assert _versions(postgres_url) == list(range(1, LATEST + 1))


@pytest.mark.empty_database
async def test_postgresql_upgrading_to_version_4_coalesces_queued_triggers(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        for migration in catalogue.migrations("postgresql")[:3]:
            await conn.execute(migration.sql)
        await conn.execute(catalogue.queries("postgresql")["create_version_table"])
        await conn.execute("INSERT INTO ratchet_schema_version VALUES (1, 0), (2, 0), (3, 0)")
        await conn.execute(
            "INSERT INTO triggers (fire_at, priority, task_id, kind, payload, dedupe_key) VALUES "
            "(300, 5, 't1', 'wake', '{\"n\": 1}', NULL), (100, 7, 't1', 'wake', '{\"n\": 2}', 'k'), "
            "(200, 1, 't1', 'start', '{}', NULL), (50, 0, NULL, 'schedule', '{}', 's1')"
        )
    async with await open_store(postgres_url) as store:
        assert await store.schema_version() == LATEST
        queued = {(t.task_id, t.kind): t for t in await store.list_triggers()}
    assert set(queued) == {(None, "schedule"), ("t1", "start"), ("t1", "wake")}
    wake = queued["t1", "wake"]
    assert (rows.to_micros(wake.fire_at), wake.priority, wake.payload) == (100, 5, {"n": 1})


@pytest.mark.empty_database
def test_postgresql_ratchet_migrate_makes_the_schema(postgres_url: str) -> None:
    done = subprocess.run(
        ratchet_command("migrate", "--store", postgres_url),
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert f"schema version {LATEST}" in done.stdout
    assert _versions(postgres_url) == list(range(1, LATEST + 1))


# ------------------------------------------------------------------ refusals


async def test_sqlite_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = _fresh(tmp_path / "r.db", fresh_from_schema=True)
    latest = catalogue.latest_version("sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO ratchet_schema_version VALUES (?, 0)", (latest + 7,))
    before = _digest(path)
    with pytest.raises(SchemaTooNew) as caught:
        await open_store(f"sqlite:///{path}")
    assert f"version {latest + 7}" in str(caught.value)
    assert f"version {latest}" in str(caught.value)
    assert _digest(path) == before


async def test_postgresql_a_newer_schema_is_refused_naming_both_versions(postgres_url: str) -> None:
    await _migrated(postgres_url, fresh_from_schema=True)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("INSERT INTO ratchet_schema_version VALUES (%s, 0)", (LATEST + 7,))
    before = _shape(postgres_url)
    with pytest.raises(SchemaTooNew) as caught:
        await open_store(postgres_url)
    assert f"version {LATEST + 7}" in str(caught.value)
    assert f"version {LATEST}" in str(caught.value)
    assert _shape(postgres_url) == before
    assert _versions(postgres_url) == [*range(1, LATEST + 1), LATEST + 7]


async def test_sqlite_another_programs_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE birds (name TEXT)")
        conn.execute("INSERT INTO birds VALUES ('wren')")
    before = _digest(path)
    with pytest.raises(NotARatchetDatabase, match="something else"):
        await open_store(f"sqlite:///{path}")
    assert _digest(path) == before


@pytest.mark.empty_database
async def test_postgresql_another_programs_database_is_refused_and_left_untouched(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE birds (name TEXT)")
        conn.execute("INSERT INTO birds VALUES ('wren')")
    before = _shape(postgres_url)
    for create in (True, False):
        with pytest.raises(NotARatchetDatabase, match="something else"):
            await open_store(postgres_url, create=create)
    assert _shape(postgres_url) == before
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT name FROM birds").fetchall() == [("wren",)]


@pytest.mark.parametrize("create", [True, False])
async def test_sqlite_a_text_file_is_refused_and_left_untouched(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# not a database\n" * 50)
    before = _digest(path)
    with pytest.raises(NotARatchetDatabase, match="not a Ratchet database"):
        await open_store(f"sqlite:///{path}", create=create)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


@pytest.mark.empty_database
async def test_postgresql_an_empty_database_is_not_made_into_a_store_when_create_is_false(
    postgres_url: str,
) -> None:
    with pytest.raises(StoreNotFound, match="ratchet migrate"):
        await open_store(postgres_url, create=False)
    assert _shape(postgres_url) == {"columns": [], "constraints": [], "indexes": []}


async def test_sqlite_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist") as caught:
        await open_store(f"sqlite:///{tmp_path}/no/such/dir/r.db", create=False)
    assert not isinstance(caught.value, StoreNotFound)
    assert not (tmp_path / "no").exists()


async def test_sqlite_a_missing_file_is_not_created_when_create_is_false(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFound, match="ratchet migrate"):
        await open_store(f"sqlite:///{tmp_path}/r.db", create=False)
    assert list(tmp_path.iterdir()) == []


async def test_postgresql_a_missing_database_is_named_with_how_to_create_it(postgres: Cluster) -> None:
    with pytest.raises(StoreNotFound) as caught:
        await open_store(postgres.url("no_such_db"))
    assert "no_such_db" in str(caught.value)
    assert "createdb no_such_db" in str(caught.value)
    assert "\n" not in str(caught.value)

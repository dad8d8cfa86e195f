"""The PostgreSQL store's own behaviour: opening, migrating under a lock, refusing
what is not Ratchet's, clear errors, and writers at once (PostgreSQL only).

The behaviour every store shares is in the other modules of this suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from ratchet.errors import (
    NotARatchetDatabase,
    SchemaTooNew,
    StoreError,
    StoreNotFound,
    StoreURLError,
)
from ratchet.model import TaskStatus, utcnow
from ratchet.store import catalogue, open_store, rows, store_from_url
from ratchet.store.base import TRIGGERS, events_topic
from ratchet.store.postgres import PostgresStore
from ratchet.store.postgres_schema import Target, migrate

from ..cli.cli_support import ratchet_command, ratchet_env
from ..helpers.builders import make_event, make_task
from ..helpers.pg import Cluster

LATEST = catalogue.latest_version("postgresql")
PROCESSES = 10
TIMEOUT = 120

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
        assert await migrate(conn, Target.of(url), fresh_from_schema=fresh_from_schema) == LATEST
    return url


# ------------------------------------------------------------------ migrations


async def test_fresh_schema_equals_migrated_schema(postgres: Cluster) -> None:
    with postgres.database() as fresh, postgres.database() as stepwise:
        from_schema = _shape(await _migrated(fresh, fresh_from_schema=True))
        from_migrations = _shape(await _migrated(stepwise, fresh_from_schema=False))
        assert from_schema == from_migrations
        assert {table for table, *_ in from_schema["columns"]} >= {
            "tasks", "steps", "operations", "messages", "events", "artifacts", "triggers",
            "checkpoints", "sessions", "leases", "lease_claims", "approvals", "ratchet_schema_version",
        }
        assert _versions(fresh) == _versions(stepwise) == list(range(1, LATEST + 1))


async def test_both_dialects_have_the_same_schema_versions() -> None:
    postgres = [(m.version, m.title) for m in catalogue.migrations("postgresql")]
    assert postgres == [(m.version, m.title) for m in catalogue.migrations("sqlite")]


async def test_opening_again_changes_nothing(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        assert await store.schema_version() == LATEST
    before = _shape(postgres_url)
    async with await open_store(postgres_url) as store:
        assert await store.schema_version() == LATEST
    assert _shape(postgres_url) == before
    assert _versions(postgres_url) == list(range(1, LATEST + 1))


def test_processes_opening_an_empty_database_at_once_migrate_it_once(
    postgres_url: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    openers = [
        subprocess.Popen([sys.executable, "-c", OPENER, postgres_url, str(go)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
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


async def test_upgrading_to_version_4_coalesces_queued_triggers(postgres_url: str) -> None:
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
    assert (rows_micros(wake.fire_at), wake.priority, wake.payload) == (100, 5, {"n": 1})


def test_ratchet_migrate_makes_the_schema(postgres_url: str) -> None:
    done = subprocess.run(ratchet_command("migrate", "--store", postgres_url), env=ratchet_env(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert f"schema version {LATEST}" in done.stdout
    assert _versions(postgres_url) == list(range(1, LATEST + 1))


# ------------------------------------------------------------------ refusals


async def test_another_programs_database_is_refused_and_left_untouched(postgres_url: str) -> None:
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


async def test_a_newer_schema_is_refused_naming_both_versions(postgres_url: str) -> None:
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


async def test_an_empty_database_is_not_made_into_a_store_when_create_is_false(postgres_url: str) -> None:
    with pytest.raises(StoreNotFound, match="ratchet migrate"):
        await open_store(postgres_url, create=False)
    assert _shape(postgres_url) == {"columns": [], "constraints": [], "indexes": []}


async def test_a_missing_database_is_named_with_how_to_create_it(postgres: Cluster) -> None:
    with pytest.raises(StoreNotFound) as caught:
        await open_store(postgres.url("no_such_db"))
    assert "no_such_db" in str(caught.value)
    assert "createdb no_such_db" in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_an_unreachable_server_is_one_line_naming_it_without_the_password() -> None:
    with _port_nobody_listens_on() as port:
        with pytest.raises(StoreError) as caught:
            await open_store(f"postgresql://someone:hunter2@localhost:{port}/db")
    message = str(caught.value)
    assert not isinstance(caught.value, StoreNotFound)
    assert f"localhost:{port}" in message and "'db'" in message
    assert "hunter2" not in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://localhost/db?no_such_option=1",
        "postgresql://localhost:port/db",
        "postgresql://[::1/db",
        "postgresql://localhost/db?pool_size=none",
        "postgresql://localhost/db?pool_size=0",
    ],
)
def test_a_bad_url_is_refused_before_connecting(url: str) -> None:
    with pytest.raises(StoreURLError) as caught:
        _unopened(url)
    assert "\n" not in str(caught.value)


def test_ratchet_options_are_taken_out_of_the_url() -> None:
    store = _unopened("postgresql://u:pw@db.example:6543/work?sslmode=disable&pool_size=3")
    assert store.pool_size == 3
    assert store.conninfo == "postgresql://u:pw@db.example:6543/work?sslmode=disable"
    assert str(store.target) == "database 'work' on db.example:6543"
    assert _unopened("postgres://localhost/work").pool_size == 10


def test_the_cli_says_in_one_line_that_the_server_is_unreachable() -> None:
    with _port_nobody_listens_on() as port:
        done = subprocess.run(ratchet_command("tasks", "--store", f"postgresql://localhost:{port}/db"),
                              env=ratchet_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert f"localhost:{port}" in done.stderr


# ------------------------------------------------------------------ writers at once


async def test_transactions_of_different_tasks_run_at_once(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        await store.create_task(make_task("t1"))
        entered = asyncio.Event()

        async def slow() -> None:
            async with store.transaction() as tx:
                await tx.append_event(make_event("t1", "slow"))
                entered.set()
                await asyncio.sleep(0.3)

        holder = asyncio.create_task(slow())
        await entered.wait()
        started = asyncio.get_running_loop().time()
        await store.create_task(make_task("t2"))
        assert asyncio.get_running_loop().time() - started < 0.2
        await holder


async def test_appenders_at_once_get_each_seq_once(postgres_url: str) -> None:
    async with await open_store(f"{postgres_url}?pool_size=8") as store:
        await store.create_task(make_task("t1"))
        await asyncio.gather(*(store.append_event(make_event("t1", str(i))) for i in range(40)))
        events = await store.list_events("t1")
    assert [event.seq for event in events] == list(range(1, 41))
    assert sorted(int(event.message) for event in events) == list(range(40))


async def test_first_claims_at_once_grant_one_lease(postgres_url: str) -> None:
    async with await open_store(f"{postgres_url}?pool_size=8") as store:
        await store.create_task(make_task("t1"))
        leases = await asyncio.gather(*(store.claim_lease("t1", f"w{i}", 30) for i in range(8)))
        granted = [lease for lease in leases if lease is not None]
        assert [lease.token for lease in granted] == [1]
        assert len(await store.lease_history("t1")) == 1


async def test_a_claimer_skips_a_task_whose_lapsed_lease_fences_a_writer(postgres_url: str) -> None:
    """A claimer must not wait for a lease row a writer holds while it holds the task's row (deadlock)."""
    async with await open_store(postgres_url) as store:
        task = await store.create_task(make_task("t1"))
        lapsed = await store.claim_lease(task.id, "late", 1, now=utcnow() - dt.timedelta(seconds=10))
        assert lapsed is not None
        writing, claimed_once = asyncio.Event(), asyncio.Event()

        async def late_writer() -> None:
            async with store.transaction(fence=lapsed) as tx:
                writing.set()
                await claimed_once.wait()
                await tx.update_task(task.transition(TaskStatus.RUNNING))

        writer = asyncio.create_task(late_writer())
        await writing.wait()
        assert await asyncio.wait_for(store.claim_tasks("w2", 30), 5) == []
        claimed_once.set()
        await writer
        [lease] = await store.claim_tasks("w2", 30)
        assert (lease.task_id, lease.token, lease.owner) == (task.id, 2, "w2")


# ------------------------------------------------------------------ change feed


async def test_a_feed_reconnects_when_its_connection_is_lost_and_wakes_once(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        await store.create_task(make_task("t1"))
        async with store.changes(events_topic("t1")) as feed:
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'LISTEN ratchet_%%'"
                ).fetchall()
            assert killed == [(True,)]
            assert await feed.wait(10), "a reconnected feed wakes its waiters: they may have missed a change"
            await asyncio.sleep(0.1)
            assert not await feed.wait(0)
            await store.append_event(make_event("t1"))
            assert await feed.wait(10), "the feed did not hear a commit after reconnecting"


async def test_a_closed_store_stops_listening(postgres_url: str) -> None:
    store = await open_store(postgres_url)
    async with store.changes(TRIGGERS):
        pass
    await store.close()
    with psycopg.connect(postgres_url) as admin:
        listening = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'LISTEN ratchet_%%' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert listening == (0,)


# ------------------------------------------------------------------ helpers


def rows_micros(value: dt.datetime) -> int:
    return rows.to_micros(value)


def _unopened(url: str) -> PostgresStore:
    store = store_from_url(url)
    assert isinstance(store, PostgresStore)
    return store


@contextlib.contextmanager
def _port_nobody_listens_on() -> Iterator[int]:
    """A localhost port bound (so nobody else takes it) but not listening, for the block."""
    with socket.socket() as bound:
        bound.bind(("localhost", 0))
        yield bound.getsockname()[1]

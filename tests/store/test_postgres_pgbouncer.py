"""The PostgreSQL store behind a real PgBouncer in transaction pooling mode (tests/helpers/pgbouncer.py).

The store finds out it is behind a transaction pooler as it opens (or the
URL says so): then it prepares no statement, and its change feeds poll unless
``?listen_url=`` names a direct connection to ``LISTEN`` on. A direct
connection keeps prepared statements and LISTEN.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import quote

import psycopg
import pytest

from ratchet.errors import StoreError, StoreUnavailable, StoreURLError
from ratchet.records import TaskStatus, Trigger
from ratchet.store import StateStore, open_store, redact_url
from ratchet.store.changes import TRIGGERS
from ratchet.store.sql.postgresql import PostgresStore
from ratchet.store.sql.postgresql.pooling import POOLED_POLL

from ..helpers.builders import make_task
from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env
from ..helpers.pg import Cluster
from ..helpers.pgbouncer import Bouncer

CONCURRENT = 8  # transactions at once: more than PgBouncer's server connections for one database
ROUNDS = 12  # each of them runs its statements more than psycopg's 5 before it prepares one


def _with(url: str, option: str) -> str:
    return url + ("&" if "?" in url else "?") + option


def _pooling(store: StateStore) -> bool | None:
    assert isinstance(store, PostgresStore)
    return store.transaction_pooling


async def test_a_store_through_pgbouncer_knows_it_is_pooled_and_a_direct_one_that_it_is_not(
    postgres_url: str, pgbouncer_url: str
) -> None:
    pooled = await open_store(pgbouncer_url)
    direct = await open_store(postgres_url)
    try:
        assert (_pooling(pooled), pooled.change_poll) == (True, POOLED_POLL)
        assert (_pooling(direct), direct.change_poll) == (False, None)
        await pooled.create_task(make_task("through-the-pooler"))
        assert (await direct.get_task("through-the-pooler")).status is TaskStatus.QUEUED
    finally:
        await pooled.close()
        await direct.close()


async def test_the_url_says_it_outright_either_way(postgres_url: str, pgbouncer_url: str) -> None:
    told_direct = await open_store(_with(pgbouncer_url, "transaction_pooling=off"))
    told_pooled = await open_store(_with(postgres_url, "transaction_pooling=on"))
    try:
        assert (_pooling(told_direct), told_direct.change_poll) == (False, None)
        assert (_pooling(told_pooled), told_pooled.change_poll) == (True, POOLED_POLL)
    finally:
        await told_direct.close()
        await told_pooled.close()


async def _read_at_once_again_and_again(store: StateStore) -> None:
    """The same statements on every connection of the store's pool, many times over."""
    for _ in range(ROUNDS):
        found = await asyncio.gather(*(store.get_task("read-often") for _ in range(CONCURRENT)))
        assert {task.id for task in found} == {"read-often"}


async def test_statements_run_again_and_again_through_pgbouncer_are_never_prepared(
    pgbouncer_url: str, pgbouncer: Bouncer
) -> None:
    url = _with(pgbouncer_url, f"pool_size={CONCURRENT}")
    assert pgbouncer.pool_size < CONCURRENT  # the store's connections share the server's
    writer = await open_store(url)
    try:
        await writer.create_task(make_task("read-often"))
    finally:
        await writer.close()

    # Told it is direct, the store lets psycopg prepare what it runs often, and PgBouncer runs the
    # next transaction on a server connection that has another's statement of that name, or none.
    misled = await open_store(_with(url, "transaction_pooling=off"))
    try:
        with pytest.raises(StoreError, match="prepared statement"):
            await _read_at_once_again_and_again(misled)
    finally:
        await misled.close()

    store = await open_store(url)
    try:
        assert _pooling(store) is True
        await _read_at_once_again_and_again(store)
    finally:
        await store.close()


async def test_behind_pgbouncer_the_feeds_poll_and_say_so_once(
    pgbouncer_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store = await open_store(pgbouncer_url)
    writer = await open_store(pgbouncer_url)  # another process's writes: heard of only through NOTIFY
    try:
        await writer.create_task(make_task("polled"))
        for _ in range(3):
            async with store.changes(TRIGGERS) as feed:
                await writer.put_trigger(Trigger(kind="wake", task_id="polled"))
                assert await feed.wait(30) is False  # no notification can reach it: it looks again
    finally:
        await store.close()
        await writer.close()
    said = [record.getMessage() for record in caplog.records if "transaction pooler" in record.getMessage()]
    assert len(said) == 1, said
    assert "?listen_url=" in said[0] and f"every {POOLED_POLL:g} s" in said[0]


async def test_with_a_listen_url_a_feed_behind_pgbouncer_is_woken_by_notify(
    postgres_url: str, pgbouncer_url: str, postgres: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    listening = await open_store(_with(pgbouncer_url, "listen_url=" + quote(postgres_url, safe="")))
    writer = await open_store(pgbouncer_url)
    try:
        assert (_pooling(listening), listening.change_poll) == (True, None)
        async with listening.changes(TRIGGERS) as feed:
            database = postgres_url.rsplit("/", 1)[1]
            with postgres.admin() as admin:
                listens = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = %s AND query = 'LISTEN ratchet_triggers'",
                    (database,),
                ).fetchone()
            assert listens == (1,)  # on the direct connection: nothing LISTENs through PgBouncer
            await writer.create_task(make_task("wake-up"))
            await writer.put_trigger(Trigger(kind="wake", task_id="wake-up"))
            # A feed that cannot poll (change_poll None) returns True only for a notification.
            assert await feed.wait(30) is True
    finally:
        await listening.close()
        await writer.close()
    assert not [record for record in caplog.records if "transaction pooler" in record.getMessage()]


@pytest.mark.empty_database
async def test_stores_opening_at_once_migrate_an_empty_database_through_pgbouncer(
    pgbouncer_url: str,
) -> None:
    stores = await asyncio.gather(*(open_store(pgbouncer_url) for _ in range(4)))
    try:
        await stores[0].create_task(make_task("after-migrating"))
        assert [task.id for task in await stores[3].list_tasks()] == ["after-migrating"]
    finally:
        for store in stores:
            await store.close()


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("transaction_pooling=maybe", "transaction_pooling must be 'on' or 'off', not 'maybe'"),
        (
            "listen_url=mysql%3A%2F%2Fu%3Ahush-hush%40db%2Fapp",
            "listen_url must be a percent-encoded postgresql:// URL",
        ),
        (
            "listen_url=postgresql%3A%2F%2Fu%3Ahush-hush%40db%3Afive%2Fapp",
            "listen_url's port 'five' is not a number",
        ),
        (
            "listen_url=postgresql%3A%2F%2Fu%3Ahush-hush%40db%2Fapp%3Fpool_size%3D3",
            "listen_url is not a valid PostgreSQL URL",
        ),
    ],
)
def test_a_bad_option_is_one_line_without_the_password(option: str, said: str) -> None:
    url = f"postgresql://me:outer-secret@localhost:6432/app?{option}"
    with pytest.raises(StoreURLError) as refused:
        asyncio.run(open_store(url))
    message = str(refused.value)
    assert said in message and "\n" not in message
    assert "hush-hush" not in message and "outer-secret" not in message


def test_a_bad_option_on_the_cli_is_one_line_and_exit_code_2() -> None:
    import subprocess

    url = "postgresql://me@localhost:6432/app?listen_url=postgresql%3A%2F%2Fu%3Ahush-hush%40db%3Ax%2Fapp"
    done = subprocess.run(
        ratchet_command("tasks", "--store", url),
        capture_output=True,
        text=True,
        env=ratchet_env(),
        timeout=60,
    )
    assert_one_line_error(done, "listen_url's port 'x' is not a number")
    assert "hush-hush" not in done.stderr + done.stdout


def test_the_listen_urls_password_is_hidden_wherever_the_url_is_shown() -> None:
    inner = "postgresql://bob:s%40cret-inner@db:5432/app"
    url = f"postgresql://bob:outer@pooler:6432/app?listen_url={quote(inner, safe='')}&pool_size=4"
    shown = redact_url(url)
    assert "cret-inner" not in shown and "outer" not in shown
    assert shown.startswith("postgresql://bob:***@pooler:6432/app?listen_url=postgresql://bob:***@db")
    assert shown.endswith("&pool_size=4")


async def test_a_listen_url_the_server_refuses_fails_the_feed_in_one_line_without_its_password(
    postgres: Cluster, postgres_url: str, pgbouncer_url: str
) -> None:
    postgres.require_password("ratchet_listener", "right-one")
    database = postgres_url.rsplit("/", 1)[1]
    wrong = f"postgresql://ratchet_listener:wrong-one@localhost:{postgres.port}/{database}"
    store = await open_store(_with(pgbouncer_url, "listen_url=" + quote(wrong, safe="")))
    try:
        with pytest.raises(StoreUnavailable) as refused:
            async with store.changes(TRIGGERS):
                pass
    finally:
        await store.close()
    message = str(refused.value)
    assert "\n" not in message and "wrong-one" not in message
    assert f"database {database!r} on localhost:{postgres.port}" in message


def test_pgbouncer_runs_in_transaction_mode(pgbouncer: Bouncer, postgres_url: str) -> None:
    """The helper's PgBouncer shares server connections between clients: else the tests above mean nothing."""
    url = pgbouncer.through(postgres_url)
    with psycopg.connect(url, autocommit=True) as first, psycopg.connect(url, autocommit=True) as second:
        pids = [conn.execute("SELECT pg_backend_pid()").fetchone() for conn in (first, second)]
    assert pids[0] == pids[1]

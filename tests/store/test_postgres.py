"""The PostgreSQL store's own behaviour: clear connection errors, writers at once,
and the change feed over LISTEN/NOTIFY (PostgreSQL only).

The behaviour every store shares is in the other modules of this suite; its
schema and migrations sit beside SQLite's in test_migrations.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket
import subprocess
from collections.abc import Iterator

import psycopg
import pytest

from ratchet.engine.outside_writes import hand_off
from ratchet.errors import StoreError, StoreNotFound, StoreURLError
from ratchet.records import TaskStatus, utcnow
from ratchet.store import open_store, store_from_url
from ratchet.store.changes import TRIGGERS, events_topic
from ratchet.store.sql.postgresql import PostgresStore

from ..helpers.builders import make_event, make_task
from ..helpers.cli import ratchet_command, ratchet_env

TIMEOUT = 120


# ------------------------------------------------------------------ connection errors


async def test_an_unreachable_server_is_one_line_naming_it_without_the_password() -> None:
    with _port_nobody_listens_on() as port, pytest.raises(StoreError) as caught:
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
        done = subprocess.run(
            ratchet_command("tasks", "--store", f"postgresql://localhost:{port}/db"),
            env=ratchet_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
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
                await tx.get_task(task.id)  # the fence goes with the first statement: the lease row is held
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


async def test_an_outside_write_waits_for_the_run_instead_of_deadlocking_with_it(postgres_url: str) -> None:
    """A run takes a task's event numbers, then its row; an outside write (here a handoff) takes
    the row, then event numbers. Holding off the run first (hold_run) orders them."""
    async with await open_store(f"{postgres_url}?pool_size=4") as store:
        task = await store.create_task(make_task("t1"))
        lease = await store.claim_lease(task.id, "w1", 30)
        assert lease is not None
        numbered, handing = asyncio.Event(), asyncio.Event()

        async def run_write() -> None:
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, "progress"))  # the task's event numbers
                numbered.set()
                await handing.wait()
                await asyncio.sleep(0.2)  # the handoff is under way meanwhile
                await tx.update_task(task.transition(TaskStatus.RUNNING))  # then its row

        async def outside_write() -> None:
            await numbered.wait()
            handing.set()
            await hand_off(store, task.id, "bob", note="yours", note_name="note")

        await asyncio.wait_for(asyncio.gather(run_write(), outside_write()), 30)
        stored = await store.get_task(task.id)
        assert (stored.agent, stored.status) == ("bob", TaskStatus.RUNNING)
        kinds = [event.kind for event in await store.list_events(task.id)]
        assert kinds.index("handed_off") > kinds.index(make_event(task.id, "progress").kind)


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

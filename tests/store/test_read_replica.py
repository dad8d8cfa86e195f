"""Task listings on a read replica (``?read_url=``): a real primary streaming to a real hot standby.

The proof that a listing comes from the replica: replay is paused there
(``pg_wal_replay_pause()``), a task is made on the primary, and the listing
does not show it and says the replica is behind; once replay resumes it does.
Meanwhile everything else (a task read by its id, writes) reads the primary.
One pair of servers serves the whole module, each test a database of its own.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from ratchet.store import open_store
from ratchet.store.sql.postgresql.replica import log as replica_log

from ..helpers.builders import make_task
from ..helpers.cli import assert_one_line_error, ratchet_runner
from ..helpers.pg import free_port
from ..helpers.replication import ReplicatedPair, replicated_pair
from ..serve.support import client_for


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicatedPair]:
    with replicated_pair(synchronous=False) as started:
        yield started


@pytest.fixture
def database(pair: ReplicatedPair) -> str:
    """A fresh database on the primary, with Ratchet's schema, replayed on the replica; its name."""
    return pair.create_database()


def with_replica(pair: ReplicatedPair, database: str, read_url: str | None = None) -> str:
    read_url = read_url or pair.replica.url(database)
    return f"{pair.primary.url(database)}?read_url={quote(read_url, safe='')}"


async def migrated(pair: ReplicatedPair, database: str) -> None:
    async with await open_store(pair.primary.url(database)):
        pass
    pair.wait_replayed()


class Paused:
    """Replay paused on the replica for the block (it still receives the primary's WAL)."""

    def __init__(self, pair: ReplicatedPair) -> None:
        self.pair = pair

    def __enter__(self) -> Paused:
        self._replica("SELECT pg_wal_replay_pause()")
        return self

    def received(self, timeout: float = 30.0) -> None:
        """Wait until the replica has received (not replayed) all the primary has written."""
        with self.pair.primary.admin() as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.pair.replica.url(), autocommit=True) as conn:
            while time.monotonic() < deadline:
                got = conn.execute("SELECT pg_last_wal_receive_lsn() >= %s::pg_lsn", (row[0],)).fetchone()
                if got and got[0]:
                    return
                time.sleep(0.02)
        raise RuntimeError("the replica did not receive the primary's WAL")

    def __exit__(self, *exc_info: object) -> None:
        self._replica("SELECT pg_wal_replay_resume()")
        self.pair.wait_replayed()

    def _replica(self, sql: str) -> None:
        with psycopg.connect(self.pair.replica.url(), autocommit=True) as conn:
            conn.execute(sql)


async def test_listings_read_the_replica_and_say_how_far_behind_it_is(
    pair: ReplicatedPair, database: str
) -> None:
    await migrated(pair, database)
    async with await open_store(with_replica(pair, database)) as store:
        await store.create_task(make_task("seen"))
        pair.wait_replayed()
        async with store.listing() as (tx, replica):
            assert [row.id for row in await tx.list_task_rows()] == ["seen"]
        assert replica is not None and replica.used
        assert replica.server == f"localhost:{pair.replica.port}"
        assert replica.behind == 0  # it has replayed all it received

        with Paused(pair) as paused:
            await store.create_task(make_task("new"))
            paused.received()
            async with store.listing() as (tx, replica):
                listed = [row.id for row in await tx.list_task_rows()]
                counted = await tx.count_task_rows()
            assert listed == ["seen"] and counted == 1  # the replica has not replayed it
            assert replica is not None and replica.used
            assert replica.behind is not None and replica.behind > 0
            assert "s behind" in replica.describe()
            # A task read by its id, and a plain read, are the primary's: found at once.
            assert (await store.get_task("new")).id == "new"
            assert [row.id for row in await store.list_task_rows()] == ["seen", "new"]

        async with store.listing() as (tx, replica):
            assert [row.id for row in await tx.list_task_rows()] == ["seen", "new"]
        assert replica is not None and replica.behind == 0


async def test_a_store_without_read_url_lists_from_itself(pair: ReplicatedPair, database: str) -> None:
    async with await open_store(pair.primary.url(database)) as store:
        await store.create_task(make_task("t1"))
        async with store.listing() as (tx, replica):
            assert [row.id for row in await tx.list_task_rows()] == ["t1"]
        assert replica is None


async def test_read_url_naming_a_primary_lists_there_with_no_lag(pair: ReplicatedPair, database: str) -> None:
    await migrated(pair, database)
    url = with_replica(pair, database, read_url=pair.primary.url(database))
    async with await open_store(url) as store:
        await store.create_task(make_task("t1"))
        async with store.listing() as (tx, replica):
            assert [row.id for row in await tx.list_task_rows()] == ["t1"]
        assert replica is not None and replica.used and replica.behind == 0


async def test_a_replica_that_cannot_be_reached_lists_from_the_primary_and_warns_once(
    pair: ReplicatedPair, database: str, caplog: pytest.LogCaptureFixture
) -> None:
    nowhere = f"postgresql://postgres@localhost:{free_port()}/{database}"
    async with await open_store(with_replica(pair, database, read_url=nowhere)) as store:
        await store.create_task(make_task("t1"))
        with caplog.at_level(logging.WARNING, logger=replica_log.name):
            for _ in range(2):
                async with store.listing() as (tx, replica):
                    assert [row.id for row in await tx.list_task_rows()] == ["t1"]
                assert replica is not None and not replica.used and replica.behind is None
                assert replica.error is not None and "cannot connect" in replica.error
                assert replica.describe().startswith("from the primary: replica localhost:")
        warned = [record for record in caplog.records if record.name == replica_log.name]
        assert len(warned) == 1, warned
        assert "task listings read the primary" in warned[0].getMessage()


async def test_the_api_listing_says_where_it_was_read_and_a_task_by_id_is_the_primarys(
    pair: ReplicatedPair, database: str
) -> None:
    await migrated(pair, database)
    async with await open_store(with_replica(pair, database)) as store, client_for(store) as client:
        await store.create_task(make_task("seen"))
        pair.wait_replayed()
        answer = (await client.get("/api/tasks")).json()
        assert [task["task_id"] for task in answer["tasks"]] == ["seen"]
        replica = answer["replica"]
        assert set(replica) == {"server", "used", "behind_seconds", "error"}
        assert replica["server"] == f"localhost:{pair.replica.port}"
        assert replica["used"] and replica["error"] is None and isinstance(replica["behind_seconds"], float)
        with Paused(pair) as paused:
            await store.create_task(make_task("new"))
            paused.received()
            answer = (await client.get("/api/tasks")).json()
            assert [task["task_id"] for task in answer["tasks"]] == ["seen"]
            assert answer["total"] == 1
            assert answer["replica"]["used"] and answer["replica"]["behind_seconds"] > 0
            found = await client.get("/api/tasks/new")
            assert found.status_code == 200 and found.json()["task"]["task_id"] == "new"


async def test_an_api_listing_without_a_replica_has_none(pair: ReplicatedPair, database: str) -> None:
    async with await open_store(pair.primary.url(database)) as store, client_for(store) as client:
        assert (await client.get("/api/tasks")).json()["replica"] is None


async def test_ratchet_tasks_says_it_listed_from_the_replica(
    pair: ReplicatedPair, database: str, tmp_path: Path
) -> None:
    await migrated(pair, database)
    url = with_replica(pair, database)
    async with await open_store(url) as store:
        await store.create_task(make_task("seen"))
    pair.wait_replayed()
    run = ratchet_runner(tmp_path)
    server = f"localhost:{pair.replica.port}"

    done = run("tasks", "--store", url)
    assert done.returncode == 0, done.stderr
    assert "seen" in done.stdout
    # Caught up, as the store's test shows; here only its form: the last line, after the table.
    assert re.fullmatch(rf"Listed from replica {server}, \d+\.\d s behind\.", done.stdout.splitlines()[-1])

    with Paused(pair) as paused:
        async with await open_store(url) as store:
            await store.create_task(make_task("new"))
        paused.received()
        done = run("tasks", "--store", url, "--json")
        assert done.returncode == 0, done.stderr
        assert [task["task_id"] for task in json.loads(done.stdout)] == ["seen"]  # stdout stays the JSON list
        [note] = done.stderr.splitlines()
        assert note.startswith(f"listed from replica {server}, ") and note.endswith(" s behind")
        assert note != f"listed from replica {server}, 0.0 s behind"  # paused: it is behind

        done = run("tasks", "--store", url, "--count", "--json")
        counted = json.loads(done.stdout)
        assert counted["count"] == 1 and counted["replica"]["behind_seconds"] > 0

        done = run("show", "new", "--store", url)  # one task: the primary's
        assert done.returncode == 0, done.stderr
        assert "new" in done.stdout


@pytest.mark.parametrize(
    ("read_url", "expected"),
    [
        ("", "read_url must be a percent-encoded postgresql:// URL, not ''"),
        ("mysql://u:sekret@h/db", "read_url must be a percent-encoded postgresql:// URL"),
        ("postgresql://u:sekret@localhost:port/db", "read_url's port 'port' is not a number"),
        ("postgresql://u:sekret@localhost/db?nonsense=1", "read_url is not a valid PostgreSQL URL"),
    ],
)
def test_a_bad_read_url_is_one_line_and_exit_2_without_its_password(
    tmp_path: Path, read_url: str, expected: str
) -> None:
    url = f"postgresql://postgres@localhost:5432/db?read_url={quote(read_url, safe='')}"
    done = ratchet_runner(tmp_path)("tasks", "--store", url)
    line = assert_one_line_error(done, expected)
    assert "sekret" not in line

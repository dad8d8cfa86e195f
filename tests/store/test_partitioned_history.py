"""PostgreSQL's partitioned history: an ended task's journal and events move to the partition of
its day and status, a running task's stay live, and a retention drops whole partitions, with
every row of their tasks, except one a task must stay in (store/sql/postgresql/history.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
import pytest

from ratchet.engine.retention import Retention, delete_expired
from ratchet.records import Event, TaskFilter, TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore, open_store
from ratchet.store.history import ArchivedDay
from ratchet.store.sql import catalogue, rows
from ratchet.store.sql.task_delete import TASK_TABLES

from ..helpers.builders import finish, make_op, make_task
from ..runtime import flows
from .test_delete_task import _rows_naming, fill


@pytest.fixture
def store_kind() -> str:
    """PostgreSQL alone has partitions: the store of each test here is one."""
    return "postgres"


NOW = utcnow()
DAYS = 86_400


def ago(days: float) -> dt.datetime:
    return NOW - dt.timedelta(days=days)


async def ended(store: StateStore, task_id: str, status: TaskStatus, days: float, **changes: Any) -> None:
    """A task of `status` that ended `days` ago, with a journal of three calls and two events."""
    await store.create_task(
        make_task(
            task_id,
            status=status,
            created_at=ago(days) - dt.timedelta(hours=1),
            updated_at=ago(days),
            **changes,
        )
    )
    await journal(store, task_id, 3)


async def journal(store: StateStore, task_id: str, calls: int, start: int = 0) -> None:
    for seq in range(start, start + calls):
        await store.record_op_finished(finish(await store.record_op_started(make_op(task_id, seq))))
        await store.append_event(Event(task_id=task_id, kind="note", message=f"call {seq}"))


def partitions_of(url: str, task_id: str) -> dict[str, set[str]]:
    """The partitions holding the task's rows of the journal and of the events, read from the database."""
    found: dict[str, set[str]] = {}
    with psycopg.connect(url) as conn:
        for table in ("operations", "events"):
            query = f"SELECT DISTINCT tableoid::regclass::text FROM {table} WHERE task_id = %s"
            found[table] = {name for (name,) in conn.execute(query, (task_id,))}
    return found


def tables_named(url: str, pattern: str) -> list[str]:
    with psycopg.connect(url) as conn:
        names = [
            name for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
    return sorted(name for name in names if re.fullmatch(pattern, name))


async def reads(store: StateStore, task_id: str) -> tuple[Any, ...]:
    return (
        await store.list_ops(task_id),
        await store.get_op(task_id, 1),
        await store.count_ops(task_id),
        await store.list_events(task_id),
        await store.last_events(task_id, 2),
        await store.count_events(task_id),
    )


def _day(days: float, status: str) -> str:
    return f"{ago(days).astimezone(dt.UTC):%Y%m%d}_{status}"


async def test_archiving_moves_an_ended_tasks_rows_and_never_a_running_tasks(
    store: StateStore, store_url: str
) -> None:
    await ended(store, "old", TaskStatus.COMPLETED, 40)
    await store.create_task(make_task("busy", status=TaskStatus.RUNNING))
    await journal(store, "busy", 2)
    before = await reads(store, "old")
    assert store.history is not None

    moved = await store.history.archive(list(TaskStatus), now=NOW)  # the ended ones

    assert moved == 1
    day = _day(40, "completed")
    assert partitions_of(store_url, "old") == {
        "operations": {f"operations_{day}"},
        "events": {f"events_{day}"},
    }
    assert partitions_of(store_url, "busy") == {"operations": {"operations_live"}, "events": {"events_live"}}
    assert await reads(store, "old") == before  # the reads of the parent find it where it went
    # The running task writes on, live, and a second pass moves nothing more.
    await journal(store, "busy", 4, start=2)
    assert await store.history.archive(list(TaskStatus), now=NOW) == 0
    assert partitions_of(store_url, "busy") == {"operations": {"operations_live"}, "events": {"events_live"}}
    assert await store.history.days() == [
        ArchivedDay(ago(40).astimezone(dt.UTC).date(), TaskStatus.COMPLETED, 1)
    ]


async def test_a_task_a_live_lease_holds_is_not_archived_and_is_deleted_as_rows(
    store: StateStore, store_url: str
) -> None:
    await ended(store, "held", TaskStatus.FAILED, 5)
    await ended(store, "newer", TaskStatus.FAILED, 3)
    lease = await store.claim_lease("held", "worker-1", 30.0)
    assert lease is not None and store.history is not None
    assert await store.history.archive([TaskStatus.FAILED], now=NOW) == 1
    assert partitions_of(store_url, "held")["operations"] == {"operations_live"}
    await store.release_lease(lease)
    # A pass walks from the newest day archived on: the task that ended before it stays live...
    assert await store.history.archive([TaskStatus.FAILED], now=NOW) == 0
    assert partitions_of(store_url, "held")["operations"] == {"operations_live"}
    # ... and goes as rows once its day expires, beside the partitions.
    done = await delete_expired(store, Retention.parse(["failed=4d"]), now=NOW)
    assert [(outcome.matched, outcome.done) for outcome in done.values()] == [(1, 1)]
    assert [row.id for row in await store.list_task_rows()] == ["newer"]
    assert partitions_of(store_url, "newer")["operations"] == {f"operations_{_day(3, 'failed')}"}


async def test_an_event_added_to_an_archived_task_is_numbered_after_the_archived_ones(
    store: StateStore, store_url: str
) -> None:
    await ended(store, "old", TaskStatus.FAILED, 10)
    assert store.history is not None
    await store.history.archive([TaskStatus.FAILED], now=NOW)

    added = await store.append_event(Event(task_id="old", kind="retried", message="retried as old-retry1"))
    again = await store.append_event(Event(task_id="old", kind="note", message="and again"))

    assert (added.seq, again.seq) == (4, 5)
    assert [event.seq for event in await store.list_events("old")] == [1, 2, 3, 4, 5]
    assert partitions_of(store_url, "old")["events"] == {"events_live", f"events_{_day(10, 'failed')}"}


async def test_retention_drops_an_expired_partition_and_every_row_of_its_tasks(
    store: StateStore, store_url: str
) -> None:
    await fill(store, "doomed", status=TaskStatus.CANCELLED, updated_at=ago(40), created_at=ago(41))
    await fill(store, "young", status=TaskStatus.CANCELLED, updated_at=ago(2), created_at=ago(3))
    before = _rows_naming(store_url, "doomed")
    assert before["operations"] and before["contents"] and before["lease_claims"]

    done = await delete_expired(store, Retention.parse(["cancelled=30d"]), now=NOW)

    assert [(outcome.matched, outcome.done) for outcome in done.values()] == [(1, 1)]
    after = {table: count for table, count in _rows_naming(store_url, "doomed").items() if count}
    assert after == {"task_changes": before["task_changes"]}  # as delete_task leaves it
    assert tables_named(store_url, r"(operations|events)_\d{8}_cancelled") == [
        f"events_{_day(2, 'cancelled')}",
        f"operations_{_day(2, 'cancelled')}",
    ]
    assert len(await store.list_ops("young")) == 3


async def test_a_status_without_a_rule_or_not_yet_expired_keeps_its_partition(
    store: StateStore, store_url: str
) -> None:
    await ended(store, "done-40", TaskStatus.COMPLETED, 40)
    await ended(store, "failed-40", TaskStatus.FAILED, 40)
    await ended(store, "cancelled-400", TaskStatus.CANCELLED, 400)

    await delete_expired(store, Retention.parse(["completed=30d", "failed=90d"]), now=NOW)

    left = sorted(row.id for row in await store.list_task_rows())
    assert left == ["cancelled-400", "failed-40"]
    assert tables_named(store_url, r"operations_\d{8}_\w+") == [f"operations_{_day(40, 'failed')}"]
    # A status with no rule is not archived: its tasks stay live, no partition of theirs piles up.
    assert partitions_of(store_url, "cancelled-400")["operations"] == {"operations_live"}


async def test_a_partition_holding_a_parent_whose_child_stays_is_kept_until_the_child_goes(
    store: StateStore, store_url: str
) -> None:
    await ended(store, "parent", TaskStatus.COMPLETED, 40)
    await ended(store, "sibling", TaskStatus.COMPLETED, 40)
    await ended(store, "child", TaskStatus.COMPLETED, 1, parent_id="parent")
    retain = Retention.parse(["completed=30d"])

    [outcome] = (await delete_expired(store, retain, now=NOW)).values()

    # The partition stays; the walk of whole expired days deletes what it may and says why not the parent.
    assert (outcome.matched, outcome.done) == (2, 1)
    assert "child task" in outcome.skipped[0].reason
    assert sorted(row.id for row in await store.list_task_rows()) == ["child", "parent"]
    assert f"operations_{_day(40, 'completed')}" in tables_named(store_url, r"operations_\d{8}_\w+")
    assert len(await store.list_ops("parent")) == 3

    await store.delete_task("child")
    [outcome] = (await delete_expired(store, retain, now=NOW)).values()
    assert (outcome.matched, outcome.done) == (1, 1)
    assert await store.list_task_rows() == []
    # The day's partition went; the child's (a day old, its rule not past it) stays, empty, until it is.
    assert tables_named(store_url, r"operations_\d{8}_\w+") == [f"operations_{_day(1, 'completed')}"]


async def test_a_drop_a_long_reader_blocks_gives_up_and_the_next_pass_drops(
    store: StateStore, store_url: str
) -> None:
    await ended(store, "old", TaskStatus.COMPLETED, 40)
    retain = Retention.parse(["completed=30d"])
    assert store.history is not None
    await store.history.archive([TaskStatus.COMPLETED], now=NOW)
    cutoffs = {rule.status: rule.cutoff(NOW) for rule in retain.rules}
    with psycopg.connect(store_url) as reader:  # a transaction reading the journal, left open
        reader.execute("SELECT COUNT(*) FROM operations").fetchone()
        assert await store.history.drop_expired(cutoffs) == {TaskStatus.COMPLETED: 0}
        assert [row.id for row in await store.list_task_rows()] == ["old"]
        assert len(await store.list_ops("old")) == 3  # rolled back whole
    assert await store.history.drop_expired(cutoffs) == {TaskStatus.COMPLETED: 1}
    assert await store.list_task_rows() == []


async def test_stores_archiving_at_once_archive_each_task_once(store: StateStore, store_url: str) -> None:
    for n in range(30):
        await ended(store, f"old-{n}", TaskStatus.COMPLETED, 3 + n % 4)
    async with await open_store(store_url) as other:
        assert store.history is not None and other.history is not None
        moved = await asyncio.gather(
            store.history.archive([TaskStatus.COMPLETED], now=NOW, batch=4),
            other.history.archive([TaskStatus.COMPLETED], now=NOW, batch=4),
        )
    assert sum(moved) == 30
    assert [day.tasks for day in await store.history.days()] == [7, 7, 8, 8]
    for n in range(30):
        assert len(await store.list_ops(f"old-{n}")) == 3


async def test_a_retry_of_an_archived_task_reads_its_journal_and_notes_it_on_it(store: StateStore) -> None:
    rt = Runtime(store)
    waiting = await rt.run(flows.asks, {"question": "which one?"})  # its journal holds the question
    failed = waiting.id
    await rt.cancel_tasks(TaskFilter(id_prefix=failed))
    journal = await store.list_ops(failed)
    assert journal and store.history is not None
    assert await store.history.archive([TaskStatus.CANCELLED], now=utcnow()) == 1
    events = await store.list_events(failed)

    assert (await rt.retry_tasks(TaskFilter(id_prefix=failed))).done == 1

    retried = await store.list_events(failed)
    assert retried[:-1] == events and retried[-1].kind == "retried"
    assert retried[-1].seq == events[-1].seq + 1
    [retry] = [row.id for row in await store.list_task_rows() if row.id != failed]
    assert (await store.get_task(retry)).status is TaskStatus.QUEUED
    assert await store.list_ops(failed) == journal  # read where it went, as the retry read it


async def test_deleting_an_archived_task_deletes_its_note_too(store: StateStore, store_url: str) -> None:
    await ended(store, "old", TaskStatus.COMPLETED, 5)
    assert store.history is not None
    await store.history.archive([TaskStatus.COMPLETED], now=NOW)
    await store.delete_task("old")
    assert _rows_naming(store_url, "old").get("archived_tasks") == 0
    # Made again under its id, it starts anew: its events count from 1, in the live partition.
    await store.create_task(make_task("old"))
    assert (await store.append_event(Event(task_id="old", kind="note", message="anew"))).seq == 1


async def test_the_statements_of_a_run_plan_the_live_partition_alone(
    store: StateStore, store_url: str
) -> None:
    """A run's writes and reads of its own journal and events: planned (as a prepared statement is,
    generic) over the live partition and no archived day, however many there are."""
    await ended(store, "old", TaskStatus.COMPLETED, 40)
    await ended(store, "older", TaskStatus.FAILED, 50)
    assert store.history is not None
    await store.history.archive([TaskStatus.COMPLETED, TaskStatus.FAILED], now=NOW)
    queries = catalogue.queries("postgresql")
    event = {
        "task_id": "t",
        "time": 0,
        "kind": "k",
        "severity": "info",
        "message": "m",
        "display_message": None,
    }
    read = {"task_id": "t", "after_seq": 0, "limit": None, "kinds": None, "count": 5}
    planned: dict[str, Sequence[Any] | Mapping[str, Any]] = {
        "record_op_started": rows.op_values(make_op("t", 1)),
        "record_op_finished": rows.op_values(finish(make_op("t", 1))),
        "append_event": {**event, "data": "{}"},
        "list_ops": read,
        "list_events": read,
        "last_events": read,
    }
    with psycopg.connect(store_url) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        for name, params in planned.items():
            plan = "\n".join(line for (line,) in conn.execute(f"EXPLAIN {queries[name]}", params))
            assert "_live" in plan or "Insert on" in plan, (name, plan)
            assert not re.search(r"(operations|events)_\d{8}", plan), (name, plan)
        # The read of an archived task's rows is planned over every partition: where they went.
        plan = str(conn.execute(f"EXPLAIN {queries['list_ops_archived']}", read).fetchall())
        assert re.search(r"operations_\d{8}_completed", plan) and re.search(r"operations_\d{8}_failed", plan)


def test_the_bulk_delete_of_a_partitions_tasks_covers_every_table_delete_task_does() -> None:
    bulk = catalogue.queries("postgresql")["history_delete_tasks"]
    for table in TASK_TABLES:
        assert f"DELETE FROM {table} " in bulk, table


# ------------------------------------------------------------------ migrating an existing store


OLD_TASKS = 30


def _version_22_store(url: str) -> None:
    """The schema before partitions, with the rows a version-22 Ratchet wrote: OLD_TASKS tasks, each
    with a journal of five calls and three events (ended tasks and running ones)."""
    queries = catalogue.queries("postgresql")
    with psycopg.connect(url, autocommit=True) as conn:
        for migration in catalogue.migrations("postgresql")[:22]:
            conn.execute(migration.sql)
        conn.execute(queries["create_version_table"])
        for version in range(1, 23):
            conn.execute("INSERT INTO ratchet_schema_version VALUES (%s, 0)", (version,))
        ops = f"INSERT INTO operations ({', '.join(rows.OP_COLUMNS)}) VALUES ({', '.join(['%s'] * 15)})"
        events = (
            "INSERT INTO events (task_id, seq, time, kind, severity, message, display_message, data) "
            "VALUES (%(task_id)s, %(seq)s, %(time)s, %(kind)s, %(severity)s, %(message)s, "
            "%(display_message)s, %(data)s)"
        )
        for n in range(OLD_TASKS):
            status = TaskStatus.COMPLETED if n % 3 else TaskStatus.RUNNING
            task = make_task(f"old-{n}", status=status, created_at=ago(20 + n), updated_at=ago(20 + n))
            conn.execute(queries["insert_task"], rows.task_params(task))
            for seq in range(5):
                conn.execute(ops, rows.op_values(finish(make_op(task.id, seq))))
            for seq in range(1, 4):
                note = Event(task_id=task.id, kind="note", message=f"note {seq}")
                conn.execute(events, {**rows.event_params(note), "seq": seq})


@pytest.mark.empty_database
async def test_migration_23_keeps_every_row_of_a_version_22_store_and_archives_them_after(
    postgres_url: str,
) -> None:
    _version_22_store(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        before = [
            conn.execute(f"SELECT * FROM {table} ORDER BY task_id, seq").fetchall()
            for table in ("operations", "events")
        ]

    async with await open_store(postgres_url) as store:
        assert await store.schema_version() == 23
        with psycopg.connect(postgres_url) as conn:
            after = [
                conn.execute(f"SELECT * FROM {table} ORDER BY task_id, seq").fetchall()
                for table in ("operations", "events")
            ]
            partitioned = conn.execute(
                "SELECT relname FROM pg_class WHERE relkind = 'p' ORDER BY relname"
            ).fetchall()
        assert [[row[:-1] for row in table] for table in after] == before  # every row, and its values
        assert all(row[-1] == 0 for table in after for row in table)  # all live
        assert partitioned == [("events",), ("operations",)]
        # The store writes and archives as a fresh one does.
        assert (await store.append_event(Event(task_id="old-1", kind="note", message="more"))).seq == 4
        done = await delete_expired(store, Retention.parse(["completed=25d"]), now=NOW)
        [outcome] = done.values()
        gone = {f"old-{n}" for n in range(OLD_TASKS) if n % 3 and 20 + n > 26}
        assert outcome.done == len(gone)
        left = {row.id for row in await store.list_task_rows()}
        assert left == {f"old-{n}" for n in range(OLD_TASKS)} - gone
        assert len(await store.list_ops("old-1")) == 5
        assert len(await store.list_ops("old-3")) == 5  # running: never archived
        assert partitions_of(postgres_url, "old-3")["operations"] == {"operations_live"}

"""The listing's schema on both dialects: tasks stored before a version gained the listing's columns
(11) or its search index, labels, model and cost (16) are listed, found and sorted after the
upgrade; and each query the listing composes walks an index."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ratchet.records import Task, TaskCursor, TaskFilter, TaskOrder, TaskRow, TaskSort, TaskStatus
from ratchet.store import open_store
from ratchet.store.sql import catalogue, rows
from ratchet.store.sql.driver import Params
from ratchet.store.sql.task_rows import _after_params, _blocks, _params

from ..helpers.builders import make_task
from ..helpers.raw_sql import run_sql

AT = dt.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)
OLD_TASK = make_task("old", name="nightly", agent="ops", created_at=AT, updated_at=AT + dt.timedelta(hours=1))
INSERT = "INSERT INTO tasks (id, status, created_at, record) VALUES (?, ?, ?, ?)"


def _sqlite_at(path: Path, version: int) -> None:
    """A database at `path` made by the migrations up to `version`, as that version of Ratchet left it."""
    with sqlite3.connect(path) as conn:
        for migration in catalogue.migrations("sqlite")[:version]:
            conn.executescript(migration.sql)
        conn.execute(catalogue.queries("sqlite")["create_version_table"])
        conn.executemany(
            "INSERT INTO ratchet_schema_version VALUES (?, 0)", [(v,) for v in range(1, version + 1)]
        )


async def _postgresql_at(url: str, version: int) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for migration in catalogue.migrations("postgresql")[:version]:
            await conn.execute(migration.sql)
        await conn.execute(catalogue.queries("postgresql")["create_version_table"])
        for number in range(1, version + 1):
            await conn.execute("INSERT INTO ratchet_schema_version VALUES (%s, 0)", (number,))


# --------------------------------------------------------------------------- from version 10


async def _assert_old_task_is_listed(url: str) -> None:
    async with await open_store(url) as store:
        [row] = await store.list_task_rows(TaskFilter(name="nightly", agent="ops"))
        assert await store.count_task_rows() == 2  # the unreadable one is listed too
    assert (row.id, row.status, row.created_at) == ("old", TaskStatus.QUEUED, AT)
    assert abs(row.updated_at - OLD_TASK.updated_at) < dt.timedelta(milliseconds=1)


async def test_sqlite_tasks_from_before_version_11_are_listed_with_their_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _sqlite_at(path, 10)
    url = f"sqlite:///{path}"
    run_sql(url, INSERT, "old", "queued", rows.to_micros(AT), OLD_TASK.to_json())
    run_sql(url, INSERT, "bad", "queued", rows.to_micros(AT), "not json")
    await _assert_old_task_is_listed(url)


@pytest.mark.empty_database
async def test_postgresql_tasks_from_before_version_11_are_listed_with_their_columns(
    postgres_url: str,
) -> None:
    await _postgresql_at(postgres_url, 10)
    for task_id, record in (("old", OLD_TASK.to_json()), ("bad", "not json")):
        run_sql(postgres_url, INSERT, task_id, "queued", rows.to_micros(AT), record)
    await _assert_old_task_is_listed(postgres_url)


# --------------------------------------------------------------------------- from version 15

BEFORE_SEARCH = 15
INSERT_15 = (
    "INSERT INTO tasks (id, status, created_at, record, name, agent, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
INSERT_OP = (
    "INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status, output, "
    "started_at, meta) VALUES (?, ?, ?, ?, 1, ?, 'succeeded', ?, 0, ?)"
)


def _record_of_version_15(task: Task) -> str:
    """`task`'s record as Ratchet wrote it before labels and cost were fields."""
    fields: dict[str, Any] = json.loads(task.to_json())
    del fields["labels"], fields["cost"]
    return json.dumps(fields)


def _fill_version_15(url: str) -> None:
    """Three tasks of version 15: one that ended with a result and spent on model calls and a child."""
    done = make_task(
        "done",
        name="ledger",
        instruction="balance the quarterly ledger",
        status=TaskStatus.COMPLETED,
        result={"summary": "Reconciled"},
        model="openai:gpt-4o-mini",
        created_at=AT,
        updated_at=AT,
    )
    running = make_task(
        "running", name="sync", instruction="mirror the bucket", created_at=AT + dt.timedelta(1)
    )
    for task in (done, running):
        values = (task.id, task.status.value, rows.to_micros(task.created_at), _record_of_version_15(task))
        run_sql(url, INSERT_15, *values, task.name, task.agent, rows.to_micros(task.updated_at))
    run_sql(url, INSERT, "bad", "queued", rows.to_micros(AT), "not json")
    for seq, kind, output, meta in (
        (0, "model", None, {"usage": {"prompt_tokens": 10, "cost": 0.25}}),
        (1, "model", None, {"usage": {"prompt_tokens": 10, "cost": 0.5}}),
        (2, "model", None, {"usage": {"prompt_tokens": 10, "cost": None}}),
        (3, "child", {"child_id": "c", "spent": {"cost": 1.0}}, {}),
    ):
        run_sql(url, INSERT_OP, "done", seq, kind, kind, f"done:{seq}", json.dumps(output), json.dumps(meta))


async def _assert_old_tasks_are_found(url: str) -> None:
    async with await open_store(url) as store:
        assert [row.id for row in await store.list_task_rows(TaskFilter(search="quarter ledg"))] == ["done"]
        assert [row.id for row in await store.list_task_rows(TaskFilter(search="reconciled"))] == ["done"]
        assert [row.id for row in await store.list_task_rows(TaskFilter(search="bucket"))] == ["running"]
        assert await store.count_task_rows(TaskFilter(model="openai:gpt-4o-mini")) == 1
        [spent] = await store.list_task_rows(TaskFilter(min_cost=1.0))
        assert (spent.id, spent.cost) == ("done", 1.75)
        by_cost = await store.list_task_rows(order=TaskOrder(TaskSort.COST, descending=True))
        assert [row.id for row in by_cost] == ["done", "running", "bad"]  # ties: the newest first
        assert (await store.get_task("done")).cost == 1.75  # the record holds it from now on
        assert (await store.get_task("running")).labels == {}
        made = await store.create_task(make_task("new", labels={"team": "ops"}, instruction="quarterly"))
        assert [row.id for row in await store.list_task_rows(TaskFilter(search="quarterly"))] == [
            "done",
            made.id,
        ]


async def test_sqlite_tasks_from_version_15_are_searched_filtered_and_sorted(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _sqlite_at(path, BEFORE_SEARCH)
    _fill_version_15(f"sqlite:///{path}")

    await _assert_old_tasks_are_found(f"sqlite:///{path}")


@pytest.mark.empty_database
async def test_postgresql_tasks_from_version_15_are_searched_filtered_and_sorted(postgres_url: str) -> None:
    await _postgresql_at(postgres_url, BEFORE_SEARCH)
    _fill_version_15(postgres_url)

    await _assert_old_tasks_are_found(postgres_url)


# --------------------------------------------------------------------------- plans


def _queries(dialect: str) -> dict[str, tuple[str, Params]]:
    """Each kind of query the listing composes (its own composition), by what it is for."""
    cases: dict[str, tuple[TaskFilter, TaskOrder]] = {
        f"all {order}": (TaskFilter(), order) for order in _orders()
    }
    cases |= {
        "name": (TaskFilter(name="n"), TaskOrder()),
        "agent -created": (TaskFilter(agent="a"), TaskOrder(descending=True)),
        "parent": (TaskFilter(parent_id="p"), TaskOrder()),
        "status": (TaskFilter(statuses=frozenset({TaskStatus.FAILED}), since=AT), TaskOrder()),
        "id prefix": (TaskFilter(id_prefix="ab"), TaskOrder()),
        "search": (TaskFilter(search="deploy prod"), TaskOrder()),
        "label": (TaskFilter(labels=(("team", "ops"),)), TaskOrder()),
        "labels": (TaskFilter(labels=(("team", "ops"), ("env", "prod"))), TaskOrder()),
    }
    last = TaskRow("t", "n", TaskStatus.QUEUED, None, None, None, AT, AT)
    queries: dict[str, tuple[str, Params]] = {}
    for label, (where, order) in cases.items():
        direction = f"{order.by}_{'desc' if order.descending else 'asc'}"
        after = label.startswith("all")
        parts = ["task_rows_select", *_blocks(where, order)]
        parts += [f"task_rows_after_{direction}"] if after else []
        parts += [f"task_rows_order_{direction}", "task_rows_page"]
        params = {
            **_params(where),
            **_after_params(TaskCursor.after(last, order) if after else None),
            "limit": 5,
            "offset": 0,
        }
        queries[label] = (catalogue.queries(dialect)["+".join(parts)], params)
    return queries


def _orders() -> list[TaskOrder]:
    return [TaskOrder(by, descending) for by in TaskSort for descending in (False, True)]


INDEX_OF = {
    "search": "SCAN s VIRTUAL TABLE INDEX 0:M",  # task_search, by MATCH
    "label": "task_labels_by_value",
    "labels": "task_labels",
    "id prefix": "USING INDEX sqlite_autoindex_tasks_1",
}
SORTED_AFTER = {"search", "label", "labels", "id prefix", "status"}  # the rows of a filter, then sorted


async def test_sqlite_listing_queries_walk_an_index(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        await store.create_task(make_task("t1"))
    with sqlite3.connect(tmp_path / "r.db") as conn:
        for label, (sql, params) in _queries("sqlite").items():
            plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
            assert INDEX_OF.get(label, "USING INDEX tasks_by_") in plan, (label, plan)
            if label not in SORTED_AFTER:  # read in order: stops at the limit
                assert "TEMP B-TREE" not in plan, (label, plan)


async def test_postgresql_listing_queries_walk_an_index(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        await store.create_task(make_task("t1"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a one-row table: ask whether an index *can* serve
        for label, (sql, params) in _queries("postgresql").items():
            plan = " | ".join(row[0] for row in conn.execute("EXPLAIN " + sql, params))
            expected = {"search": "task_text_by_word", "id prefix": "tasks_by_id"}.get(label, "Index")
            assert expected in plan, (label, plan)
            if label not in SORTED_AFTER:
                assert "Sort" not in plan, (label, plan)

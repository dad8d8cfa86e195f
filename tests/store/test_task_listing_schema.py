"""Schema version 11 on both dialects: tasks stored before it are listed with the name, agent and
update time taken from their records, and the listing's common filters walk an index."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import psycopg
import pytest

from ratchet.records import TaskFilter, TaskStatus
from ratchet.store import open_store
from ratchet.store.sql import catalogue, rows

from ..helpers.builders import make_task
from ..helpers.raw_sql import run_sql

BEFORE = 10  # the schema version before the listing's columns
AT = dt.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)
OLD_TASK = make_task("old", name="nightly", agent="ops", created_at=AT, updated_at=AT + dt.timedelta(hours=1))
INSERT = "INSERT INTO tasks (id, status, created_at, record) VALUES (?, ?, ?, ?)"


async def _assert_old_task_is_listed(url: str) -> None:
    async with await open_store(url) as store:
        [row] = await store.list_task_rows(TaskFilter(name="nightly", agent="ops"))
    assert (row.id, row.status, row.created_at) == ("old", TaskStatus.QUEUED, AT)
    assert row.updated_at is not None
    assert abs(row.updated_at - OLD_TASK.updated_at) < dt.timedelta(milliseconds=1)


async def test_sqlite_tasks_from_before_version_11_are_listed_with_their_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        for migration in catalogue.migrations("sqlite")[:BEFORE]:
            conn.executescript(migration.sql)
        conn.execute(catalogue.queries("sqlite")["create_version_table"])
        conn.executemany(
            "INSERT INTO ratchet_schema_version VALUES (?, 0)", [(v,) for v in range(1, BEFORE + 1)]
        )
        conn.execute(INSERT, ("old", "queued", rows.to_micros(AT), OLD_TASK.to_json()))
        conn.execute(INSERT, ("bad", "queued", rows.to_micros(AT), "not json"))
    await _assert_old_task_is_listed(f"sqlite:///{path}")


@pytest.mark.empty_database
async def test_postgresql_tasks_from_before_version_11_are_listed_with_their_columns(
    postgres_url: str,
) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        for migration in catalogue.migrations("postgresql")[:BEFORE]:
            await conn.execute(migration.sql)
        await conn.execute(catalogue.queries("postgresql")["create_version_table"])
        for version in range(1, BEFORE + 1):
            await conn.execute("INSERT INTO ratchet_schema_version VALUES (%s, 0)", (version,))
    for task_id, record in (("old", OLD_TASK.to_json()), ("bad", "not json")):
        run_sql(postgres_url, INSERT, task_id, "queued", rows.to_micros(AT), record)
    await _assert_old_task_is_listed(postgres_url)


def _filters() -> dict[str, dict[str, object]]:
    """The parameters of each common filter's query (the listing's own, through its query chooser)."""
    from ratchet.store.sql.task_rows import _params, _query

    shown: dict[str, dict[str, object]] = {}
    for label, where in {
        "all": TaskFilter(),
        "name": TaskFilter(name="n"),
        "agent": TaskFilter(agent="a"),
        "status": TaskFilter(statuses=frozenset({TaskStatus.FAILED})),
        "since": TaskFilter(since=AT),
    }.items():
        stem, params = _params(where)
        for direction in ("asc", "desc"):
            shown[f"{label} {direction}"] = {
                "query": _query("task_rows", stem) + "_" + direction,
                **params,
                "limit": 5,
                "offset": 0,
            }
    return shown


async def test_sqlite_listing_queries_walk_an_index_without_sorting(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    async with await open_store(url) as store:
        await store.create_task(make_task("t1"))
    queries = catalogue.queries("sqlite")
    with sqlite3.connect(tmp_path / "r.db") as conn:
        for label, params in _filters().items():
            sql = queries[str(params.pop("query"))]
            plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
            assert "USING INDEX tasks_by_" in plan, (label, plan)
            assert "TEMP B-TREE" not in plan, (label, plan)  # read in order: stops at the limit


async def test_postgresql_listing_queries_walk_an_index(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        await store.create_task(make_task("t1"))
    queries = catalogue.queries("postgresql")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a one-row table: ask whether an index *can* serve
        for label, params in _filters().items():
            sql = queries[str(params.pop("query"))]
            plan = " | ".join(row[0] for row in conn.execute("EXPLAIN " + sql, params))
            assert "Index Scan" in plan and "tasks_by_" in plan, (label, plan)
            assert "Sort" not in plan, (label, plan)  # read in order: stops at the limit

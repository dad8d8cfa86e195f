"""Migration 0022 on a store RatchetSaver wrote before it: each checkpoint's first task's pending
writes move into the checkpoint's row, the others stay, and every checkpoint reads back the same;
and a copy of a thread, whose writes may now be in checkpoints' rows, brings them all."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from ratchet.integrations.langgraph import RatchetSaver
from ratchet.store import open_store
from ratchet.store.sql import catalogue
from ratchet.store.sql.langgraph_deflate import METADATA, WRITES, deflated, inflate

from .test_langgraph_storage import append_steps, message

OLD_VERSION = 21  # the schema before 0022
CHECKPOINT_COLUMNS = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values"
)
WRITE_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes"


async def _written(url: str) -> tuple[list[CheckpointTuple], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A thread written by RatchetSaver (two namespaces, a checkpoint with two tasks' writes, a write
    on a checkpoint never stored), every checkpoint read back, and the rows as the code before 0022
    stored them: checkpoints without writes, and every task's writes on a checkpoint a row of its own
    (the same packed writes)."""
    async with await open_store(url) as store:
        saver = RatchetSaver(store)
        configs = await append_steps(saver, "t1", 6)
        await append_steps(saver, "t1", 3, ns="child:1")
        for number, config in enumerate(configs, start=1):
            await saver.aput_writes(
                config, [("messages", [message(100 + number)]), ("step", number)], "task-a"
            )
        await saver.aput_writes(configs[2], [("step", 99), ("__error__", "boom")], "task-b")
        orphan: RunnableConfig = {
            "configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "never-stored"}
        }
        await saver.aput_writes(orphan, [("step", 7)], "task-c")
        found = [t async for t in saver.alist({"configurable": {"thread_id": "t1"}})]
    rows = [
        _old_checkpoint(*row) for row in _sql(url, f"SELECT {CHECKPOINT_COLUMNS} FROM langgraph_checkpoints")
    ]
    writes = _sql(url, f"SELECT {WRITE_COLUMNS} FROM langgraph_writes")
    writes += _sql(
        url,
        "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, task_writes, write_hashes"
        " FROM langgraph_checkpoints WHERE task_id IS NOT NULL",
    )
    writes = [_old_writes(*row) for row in writes]
    values = _sql(url, "SELECT thread_id, hash, prev, items, type, body FROM langgraph_values")
    return found, rows, [*writes, *[("values", *value) for value in values]]


def _old_checkpoint(*row: Any) -> tuple[Any, ...]:
    """A checkpoint row as stored before the fifth pass: its metadata as JSON text."""
    return (*row[:7], inflate(bytes(row[7]), METADATA).decode(), row[8])


def _old_writes(*row: Any) -> tuple[Any, ...]:
    """A task's writes as stored before the fifth pass: its path in its column, its writes not deflated."""
    *key, _path, blob, hashes = row
    if not deflated(bytes(blob)):
        return row
    packed = inflate(bytes(blob), WRITES)
    assert packed[0] < 0x80  # the path's length in one byte
    return (*key, packed[1 : 1 + packed[0]].decode(), packed[1 + packed[0] :], hashes)


def _sql(url: str, statement: str, params: list[tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn, conn:
            if params is not None:
                conn.executemany(statement, params)
                return []
            return conn.execute(statement).fetchall()
    with psycopg.connect(url, autocommit=True) as server:
        statement = statement.replace("?", "%s")
        if params is not None:
            with server.cursor() as cursor:
                cursor.executemany(statement, params)
            return []
        return [
            tuple(bytes(c) if isinstance(c, memoryview) else c for c in row)
            for row in server.execute(statement)
        ]


def _old_store(url: str, dialect: str) -> None:
    """The schema at version 21, as a store made before 0022 has it."""
    if dialect == "sqlite":
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            for migration in catalogue.migrations(dialect)[:OLD_VERSION]:
                conn.executescript(migration.sql)
            conn.execute(catalogue.queries(dialect)["create_version_table"])
            conn.executemany(
                "INSERT INTO ratchet_schema_version VALUES (?, 0)", [(v,) for v in range(1, OLD_VERSION + 1)]
            )
            conn.commit()
        return
    with psycopg.connect(url, autocommit=True) as server:
        for migration in catalogue.migrations(dialect)[:OLD_VERSION]:
            server.execute(migration.sql)
        server.execute(catalogue.queries(dialect)["create_version_table"])
        for version in range(1, OLD_VERSION + 1):
            server.execute("INSERT INTO ratchet_schema_version VALUES (%s, 0)", (version,))


async def _migrate_and_compare(source: str, old: str, dialect: str) -> None:
    found, checkpoints, rest = await _written(source)
    writes = [row for row in rest if row[0] != "values"]
    values = [row[1:] for row in rest if row[0] == "values"]
    _old_store(old, dialect)
    _sql(
        old,
        f"INSERT INTO langgraph_checkpoints ({CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        checkpoints,
    )
    _sql(old, f"INSERT INTO langgraph_writes ({WRITE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", writes)
    _sql(
        old,
        "INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body) VALUES (?, ?, ?, ?, ?, ?)",
        values,
    )
    assert len(writes) == 6 + 1 + 1  # a task's writes on each root checkpoint, task-b's, task-c's

    async with await open_store(old) as store:  # migrates
        assert await store.schema_version() == catalogue.latest_version(dialect)
        migrated = [t async for t in RatchetSaver(store).alist({"configurable": {"thread_id": "t1"}})]
        assert migrated == found
        orphan = await store.list_langgraph_writes("t1", "", ["never-stored"])
        assert [(w.task_id, w.channel) for w in orphan] == [("task-c", "step")]
    # Each root checkpoint's first task moved into its row; task-b (after task-a) and task-c stayed.
    inline = _sql(old, "SELECT count(*) FROM langgraph_checkpoints WHERE task_id IS NOT NULL")
    assert inline == [(6,)]
    left = _sql(old, "SELECT task_id FROM langgraph_writes ORDER BY task_id")
    assert [bytes(row[0]) for row in left] == [b"task-b", b"task-c"]


async def test_sqlite_0022_moves_a_stored_thread_s_writes_into_its_checkpoints(tmp_path: Path) -> None:
    await _migrate_and_compare(
        f"sqlite:///{tmp_path / 'new.db'}", f"sqlite:///{tmp_path / 'old.db'}", "sqlite"
    )


@pytest.mark.empty_database
async def test_postgresql_0022_moves_a_stored_thread_s_writes_into_its_checkpoints(
    postgres_url: str, tmp_path: Path
) -> None:
    # The rows come from a SQLite store (the same columns and bytes), the migration runs on PostgreSQL.
    await _migrate_and_compare(f"sqlite:///{tmp_path / 'new.db'}", postgres_url, "postgresql")


async def test_copying_again_brings_the_writes_a_checkpoint_the_target_holds_got_since(
    store_url: str,
) -> None:
    # A checkpoint's first task's writes are in its row; the target already holds that checkpoint (an
    # earlier copy), so its row is kept and the writes come as rows of their own, as before 0022.
    async with await open_store(store_url) as store:
        saver = RatchetSaver(store)
        configs = await append_steps(saver, "t1", 3)
        await saver.acopy_thread("t1", "t2")
        await saver.aput_writes(configs[-1], [("step", 9), ("messages", [message(9)])], "task-a")
        await saver.aput_writes(configs[-1], [("step", 10)], "task-b")
        await saver.acopy_thread("t1", "t2")
        await saver.acopy_thread("t1", "t2")  # again: nothing new

        source = await saver.aget_tuple(configs[-1])
        target = await saver.aget_tuple({"configurable": {**configs[-1]["configurable"], "thread_id": "t2"}})
        assert source is not None and target is not None
        assert target.pending_writes == source.pending_writes
        assert source.pending_writes is not None and len(source.pending_writes) == 3
        assert target.checkpoint == source.checkpoint

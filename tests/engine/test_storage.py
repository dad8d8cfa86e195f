"""Storage grows linearly with the work done: rows appended, never whole-state copies."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS

# Each table holding a task's rows, and the column that names the task.
TASK_TABLES = {
    "tasks": "id",
    "steps": "task_id",
    "operations": "task_id",
    "events": "task_id",
    "messages": "thread_id",
    "checkpoints": "task_id",
}


@pytest.fixture
def store_kind() -> str:
    """The bytes are counted in the store's file."""
    return "sqlite"


@pytest.fixture
def db_path(store_url: str) -> Path:
    return Path(store_url.removeprefix("sqlite:///"))


def stored_bytes(db_path: Path, task_id: str) -> int:
    """The length of every text and blob value in the task's rows."""
    total = 0
    with sqlite3.connect(db_path) as db:
        for table, key in TASK_TABLES.items():
            columns = [
                name
                for _, name, kind, *_ in db.execute(f"PRAGMA table_info({table})")
                if kind.upper() in ("TEXT", "BLOB")
            ]
            lengths = " + ".join(f"COALESCE(LENGTH({c}), 0)" for c in columns)
            query = f"SELECT COALESCE(SUM({lengths}), 0) FROM {table} WHERE {key} = ?"
            (size,) = db.execute(query, (task_id,)).fetchone()
            total += size
    return total


async def test_stored_bytes_grow_linearly_with_the_number_of_calls(
    store: StateStore, rt: Runtime, db_path: Path
) -> None:
    small = await rt.run(f"{FLOWS}:many", {"count": 500})
    large = await rt.run(f"{FLOWS}:many", {"count": 1000})
    assert small.status is large.status is TaskStatus.COMPLETED
    assert len(await store.list_ops(large.id)) == 1000

    small_bytes, large_bytes = stored_bytes(db_path, small.id), stored_bytes(db_path, large.id)

    assert small_bytes > 500 * 20  # the rows are counted at all
    assert large_bytes <= 2.1 * small_bytes, (small_bytes, large_bytes)

"""How many bytes a store keeps for a task, to check that nothing large is kept twice."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from ratchet.store import StateStore


async def stored_bytes(store: StateStore, task_id: str) -> int:
    """Every byte the store keeps for the task: its records as JSON, and its artifacts' bodies."""
    records = [
        await store.get_task(task_id),
        *await store.list_ops(task_id),
        *await store.list_events(task_id),
        *await store.list_messages(task_id),
        *await store.list_checkpoints(task_id),
        *await store.list_steps(task_id),
    ]
    artifacts = await store.list_artifacts(task_id)
    return sum(len(record.to_json().encode()) for record in records) + sum(a.bytes for a in artifacts)


def sqlite_bytes(path: Path) -> int:
    """The length of every value in every column of every table of a SQLite file."""
    total = 0
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for column in [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]:
                query = f'SELECT COALESCE(SUM(LENGTH(CAST("{column}" AS BLOB))), 0) FROM "{table}"'
                total += db.execute(query).fetchone()[0]
    return total

"""Writing a store's rows and files behind its back, as a failing disk, a bad restore or a careless
person would."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from ratchet.store import open_store

from .builders import make_event, make_task


def run_sql(url: str, statement: str, *params: object) -> list[tuple[Any, ...]]:
    """Run one statement on the database of a sqlite:/// or postgresql:// URL; return its rows.

    Parameters are written ``?`` in `statement`, for both databases.
    """
    if url.startswith("sqlite:///"):
        with (
            contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///").partition("?")[0])) as conn,
            conn,
        ):
            return conn.execute(statement, params).fetchall()
    with psycopg.connect(url, autocommit=True) as pg_conn:
        cursor = pg_conn.execute(statement.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description else []


def change_task_record(url: str, task_id: str, change: Callable[[dict[str, Any]], object]) -> None:
    """Rewrite a stored task's record: `change` edits its JSON in place."""
    [(text,)] = run_sql(url, "SELECT record FROM tasks WHERE id = ?", task_id)
    record = json.loads(text)
    change(record)
    run_sql(url, "UPDATE tasks SET record = ? WHERE id = ?", json.dumps(record), task_id)


async def fill_sqlite_store(path: Path) -> None:
    """A store with tasks t0, t1, t2 first in the file, and 200 events of t0 after them."""
    store = await open_store(f"sqlite:///{path}")
    try:
        for n in range(3):
            await store.create_task(make_task(f"t{n}"))
        for n in range(200):
            await store.append_event(make_event("t0", "x" * 500 + str(n)))
    finally:
        await store.close()  # the last connection to close folds the WAL into the file


def garble_last_pages(path: Path, count: int = 3) -> None:
    """Write garbage over an SQLite file's last pages; its header stays whole, so SQLite still opens it."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    garbage = random.Random(11).randbytes(count * page_size)
    with path.open("r+b") as file:
        file.seek((pages - count) * page_size)
        file.write(garbage)

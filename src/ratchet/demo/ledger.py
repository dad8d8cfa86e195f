"""The demo's ledger: a SQLite file where the deploy tools write what they did.

It stands for the outside world (a registry, a cluster). Each tool call adds
an ``invocations`` row when it starts, and, when its effect is done, an
``effects`` row keyed by the call's idempotency key with ``INSERT OR
IGNORE``: the way a real system uses an Idempotency-Key, so a call run again
with the same key changes nothing the second time. Counting both shows how
often a tool ran and how often it took effect.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..records import utcnow

__all__ = ["LEDGER_ENV", "Effect", "Invocation", "Ledger"]

LEDGER_ENV = "RATCHET_DEMO_LEDGER"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS invocations (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    pid             INTEGER NOT NULL,
    started_at      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS effects (
    idempotency_key TEXT PRIMARY KEY,
    task_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    detail          TEXT NOT NULL,
    pid             INTEGER NOT NULL,
    done_at         TEXT NOT NULL
);
"""

# A row of task :task (any task's when NULL) that is :tree or a task under it (any when NULL):
# a child task's id is its parent's and a seq, ``PARENT.SEQ``.
_WHERE = (
    "coalesce(:task, task_id) = task_id"
    " AND (:tree IS NULL OR task_id = :tree OR substr(task_id, 1, length(:tree) + 1) = :tree || '.')"
)


@dataclass(frozen=True)
class Invocation:
    """One start of a tool: which call (its key), which attempt, which process."""

    tool: str
    idempotency_key: str
    attempt: int
    pid: int


@dataclass(frozen=True)
class Effect:
    """One effect in the outside world, recorded once per idempotency key."""

    tool: str
    idempotency_key: str
    detail: dict[str, Any]
    pid: int


class Ledger:
    """The ledger file at `path`; every method opens, commits and closes its own connection."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def from_environment(cls) -> Ledger:
        """The ledger ``RATCHET_DEMO_LEDGER`` names (``ratchet demo`` sets it for its workers).

        Raises:
            RuntimeError: the variable is not set.
        """
        path = os.environ.get(LEDGER_ENV)
        if not path:
            raise RuntimeError(
                f"the demo tools write to the ledger file that {LEDGER_ENV} names; "
                "run them through `ratchet demo`"
            )
        return cls(path)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=10.0)
        try:
            with conn:  # one transaction, committed on the way out
                yield conn
        finally:
            conn.close()

    def create(self) -> None:
        """Create the file and its tables if they are missing."""
        with self._connect() as conn:
            conn.executescript(_SCHEMA)

    def record_invocation(self, tool: str, task_id: str, key: str, attempt: int) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO invocations (task_id, tool, idempotency_key, attempt, pid, started_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (task_id, tool, key, attempt, os.getpid(), utcnow().isoformat()),
            )

    def record_effect(self, tool: str, task_id: str, key: str, detail: dict[str, Any]) -> bool:
        """Record the effect of the call with this key; False if that key's effect was there already."""
        with self._connect() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO effects (idempotency_key, task_id, tool, detail, pid, done_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, task_id, tool, json.dumps(detail, sort_keys=True), os.getpid(), utcnow().isoformat()),
            )
            return cursor.rowcount == 1

    def effect(self, key: str) -> Effect | None:
        """The effect recorded under idempotency key `key`, or None if that call took none yet."""
        if not self.path.exists():
            return None
        with self._connect() as conn:
            row = conn.execute(
                "SELECT tool, idempotency_key, detail, pid FROM effects WHERE idempotency_key = ?", (key,)
            ).fetchone()
        return None if row is None else Effect(row[0], row[1], json.loads(row[2]), row[3])

    def invocations(self, task_id: str | None = None, *, tree: str | None = None) -> list[Invocation]:
        """The task's tool starts (every task's without `task_id`), oldest first.

        With `tree`, only those of that task and its child tasks (``TREE.SEQ``, theirs too).
        """
        if not self.path.exists():
            return []
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT tool, idempotency_key, attempt, pid FROM invocations WHERE {_WHERE} ORDER BY id",
                {"task": task_id, "tree": tree},
            ).fetchall()
        return [Invocation(tool, key, attempt, pid) for tool, key, attempt, pid in rows]

    def effects(self, task_id: str | None = None, *, tree: str | None = None) -> list[Effect]:
        """The task's effects (every task's without `task_id`), in the order they happened.

        With `tree`, only those of that task and its child tasks.
        """
        if not self.path.exists():
            return []
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT tool, idempotency_key, detail, pid FROM effects"
                f" WHERE {_WHERE} ORDER BY done_at, rowid",
                {"task": task_id, "tree": tree},
            ).fetchall()
        return [Effect(tool, key, json.loads(detail), pid) for tool, key, detail, pid in rows]

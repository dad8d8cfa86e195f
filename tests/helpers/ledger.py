"""The outside world tools act on in the agent and crash tests: a `Ledger`, a SQLite file.

A tool writes a row to ``invocations`` on every raw call, committed before
it acts, so a kill between the two shows, and a row to ``effects`` per
effect: once per key for a tool that honours idempotency keys
(`Ledger.effect_once`), blindly for one that does not (`Ledger.append_effect`).
Processes (test and workers) share a ledger through its path.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

Output = TypeVar("Output")


class Ledger:
    """The outside world: what the tools did, in a SQLite file of its own."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)  # autocommit
        try:
            yield conn
        finally:
            conn.close()

    def create(self) -> None:
        with self._connect() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS invocations (tool TEXT NOT NULL, key TEXT NOT NULL)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS effects"
                " (key TEXT NOT NULL, tool TEXT NOT NULL, output TEXT NOT NULL)"
            )

    def invoked(self, tool: str, key: str) -> None:
        with self._connect() as conn:
            conn.execute("INSERT INTO invocations (tool, key) VALUES (?, ?)", (tool, key))

    def effect_once(self, tool: str, key: str, output: Output) -> Output:
        """Record the effect unless one is recorded under `key`; return the recorded output.

        That is `output`, or the one recorded first read back from its JSON: the same tool's
        output for the same key, of the same shape.
        """
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT output FROM effects WHERE key = ?", (key,)).fetchone()
            if row is None:
                self._insert_effect(conn, tool, key, output)
            conn.execute("COMMIT")
        if row is None:
            return output
        recorded: Output = json.loads(row[0])
        return recorded

    def append_effect(self, tool: str, key: str, output: Output) -> Output:
        """Record the effect, however many are recorded under `key` already."""
        with self._connect() as conn:
            self._insert_effect(conn, tool, key, output)
        return output

    @staticmethod
    def _insert_effect(conn: sqlite3.Connection, tool: str, key: str, output: Any) -> None:
        conn.execute(
            "INSERT INTO effects (key, tool, output) VALUES (?, ?, ?)", (key, tool, json.dumps(output))
        )

    def invocations(self) -> Counter[tuple[str, str]]:
        """How many raw calls each ``(tool, key)`` got."""
        with self._connect() as conn:
            return Counter(conn.execute("SELECT tool, key FROM invocations").fetchall())

    def effects(self) -> Counter[tuple[str, str]]:
        """How many effects each ``(tool, key)`` has."""
        with self._connect() as conn:
            return Counter(conn.execute("SELECT tool, key FROM effects").fetchall())

    def effect_output(self, tool: str, key: str) -> Any:
        """The output recorded with the first effect under `key`, or None if there is none."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT output FROM effects WHERE tool = ? AND key = ? ORDER BY rowid LIMIT 1", (tool, key)
            ).fetchone()
        return None if row is None else json.loads(row[0])

"""Tools acting on a ledger file, for agents run by many workers (failover and `ratchet submit` tests).

Loaded by path by every worker process. ``record_step`` behaves like a
service that honours idempotency keys the simple way: it looks the key up,
and acts only when no effect is recorded under it. The look-up and the write
are not one atomic step, so two workers running one call at the same time
(two holders of one task) would both act, and the ledger would show it.
Every raw start is logged too, with the process that made it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import ratchet
from ratchet import ToolContext

LEDGER_ENV = "RATCHET_FAILOVER_LEDGER"
SECONDS_ENV = "RATCHET_FAILOVER_TOOL_SECONDS"


def connect(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=60, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS starts (key TEXT NOT NULL, task_id TEXT NOT NULL, pid INTEGER NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL, task_id TEXT NOT NULL, pid INTEGER NOT NULL)"
    )
    return conn


@ratchet.tool(risk="write_local")
def record_step(label: str, ctx: ToolContext) -> dict[str, object]:
    """Record that a step of the task was done, once per idempotency key.

    Args:
        label: which step.
    """
    conn = connect(os.environ[LEDGER_ENV])
    try:
        conn.execute("INSERT INTO starts VALUES (?, ?, ?)", (ctx.idempotency_key, ctx.task_id, os.getpid()))
        time.sleep(float(os.environ.get(SECONDS_ENV, "0.05")))
        done = conn.execute("SELECT 1 FROM effects WHERE key = ?", (ctx.idempotency_key,)).fetchone()
        if done is None:
            row = (ctx.idempotency_key, ctx.task_id, os.getpid())
            conn.execute("INSERT INTO effects VALUES (?, ?, ?)", row)
    finally:
        conn.close()
    return {"label": label, "key": ctx.idempotency_key, "pid": os.getpid()}

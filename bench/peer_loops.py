"""The N-step loop of bench/peers.py, once per system: run in a fresh process, one loop per process.

Each step produces one result of about 300 bytes (``RESULT`` with its step
number) and the system makes it durable before the next step starts:

- Ratchet: a workflow calling a tool N times through ``ctx.call_tool``; the
  tool is ``read_only`` (its outcome is journaled: one commit per step) or
  ``write_local`` (an intent before it runs and the outcome after: two).
- LangGraph: a ``StateGraph`` whose one node loops back to itself N times,
  each time setting the state's ``result``; compiled with ``SqliteSaver`` or
  ``PostgresSaver`` and invoked with ``durability="sync"`` (each checkpoint
  is written before the next step starts).
- DBOS: a ``@DBOS.workflow()`` calling a ``@DBOS.step()`` N times (each
  step's output is recorded before the workflow goes on).
- The floor: the same N results stored by the driver alone, one raw
  ``INSERT`` and ``COMMIT`` each, on the store and at the durability
  Ratchet's loop is given: sqlite3 ``BEGIN IMMEDIATE; INSERT; COMMIT`` in
  WAL mode at ``synchronous`` NORMAL or FULL, psycopg ``INSERT`` then
  ``COMMIT`` on an ``AsyncConnection`` (the store's driver mode). The rows
  are encoded before the clock starts, and `FLOOR_WARMUP` rows go first,
  untimed and uncounted (a new connection's first statements, the WAL's
  start): what is timed is the commits, as the other loops' are, which
  start on a store their system has opened and used.

The time is the loop's wall time: inside the workflow for Ratchet and DBOS,
the whole ``invoke`` for LangGraph (its loop is the graph; that adds the
input checkpoint, one of N + 1). The bytes are the store's size after the
system has set up its schema and after the loop (see `stored_bytes`).

Run: ``python bench/peer_loops.py SYSTEM VARIANT STORE_URL STEPS``; prints one
JSON line: ``{"seconds": ..., "bytes_before": ..., "bytes_after": ..., "settings": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

import ratchet

TEXT = "r" * 270
THREAD = "peers-bench"


def result(step: int) -> dict[str, Any]:
    """What step `step` produces: about 300 bytes as JSON."""
    return {"step": step, "text": TEXT}


# --------------------------------------------------------------------------- bytes stored


def stored_bytes(url: str) -> int:
    """The store's size: for SQLite the file and its WAL after a checkpoint; for PostgreSQL every
    table outside the system schemas with its indexes and TOAST (``pg_total_relation_size``)."""
    if url.startswith("postgresql://"):
        import psycopg

        query = (
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p', 'm')"
            " AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'"
        )
        with psycopg.connect(url) as server:
            row = server.execute(query).fetchone()
        return int(row[0]) if row else 0
    path = Path(url)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a no-op unless the file is in WAL mode
    finally:
        conn.close()
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def sqlite_settings(conn: sqlite3.Connection) -> str:
    """The journal mode and the `synchronous` level (0 off, 1 normal, 2 full, 3 extra) of `conn`."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    level = conn.execute("PRAGMA synchronous").fetchone()[0]
    return f"journal_mode={mode}, synchronous={['OFF', 'NORMAL', 'FULL', 'EXTRA'][level]}"


# --------------------------------------------------------------------------- Ratchet


@ratchet.tool(risk="read_only")
async def produce_read(step: int) -> dict[str, Any]:
    """Produce one step's result; running it twice is harmless."""
    return result(step)


@ratchet.tool(risk="write_local")
async def produce_write(step: int) -> dict[str, Any]:
    """Produce one step's result, with side effects as far as the journal knows."""
    return result(step)


# At module level: a worker finds a task's workflow by its module and name.
@ratchet.workflow(tools=[produce_read, produce_write])
async def peers_loop(ctx: ratchet.Context, steps: int, tool: str) -> float:
    began = time.perf_counter()
    for step in range(steps):
        await ctx.call_tool(tool, {"step": step})
    return time.perf_counter() - began


def ratchet_loop(variant: str, store: str, steps: int) -> dict[str, Any]:
    """`variant` is ``read_only`` or ``side_effect``; `store` a path (``?durability=...``) or a URL."""
    path, _, durability = store.partition("?durability=")
    url = store if store.startswith("postgresql://") else f"sqlite:///{path}?durability={durability}"
    tool = "produce_read" if variant == "read_only" else "produce_write"

    async def run() -> tuple[float, int]:
        async with ratchet.Runtime(url):
            pass  # the schema, as the bytes' starting point
        before = stored_bytes(path)
        async with ratchet.Runtime(url) as runtime:
            task = await runtime.run(peers_loop, {"steps": steps, "tool": tool})
        if task.status != "completed":
            raise SystemExit(f"the Ratchet task ended {task.status}: {task.error}")
        assert isinstance(task.result, float)
        return task.result, before

    seconds, before = asyncio.run(run())
    settings = f"synchronous={durability.upper()}" if durability else "PostgreSQL"
    return {
        "seconds": seconds,
        "bytes_before": before,
        "bytes_after": stored_bytes(path),
        "settings": settings,
    }


# --------------------------------------------------------------------------- the floor

FLOOR_TABLE = "CREATE TABLE floor_results (step INTEGER PRIMARY KEY, result TEXT NOT NULL)"
FLOOR_WARMUP = 20  # rows stored before the clock starts and the bytes are counted (steps -20 to -1)


def floor_loop(store: str, steps: int) -> dict[str, Any]:
    """Each step's result stored by the driver alone: one raw insert and commit per step."""
    rows = [(step, json.dumps(result(step))) for step in range(-FLOOR_WARMUP, steps)]
    if store.startswith("postgresql://"):
        seconds, before = asyncio.run(_floor_postgres(store, rows))
        return {
            "seconds": seconds,
            "bytes_before": before,
            "bytes_after": stored_bytes(store),
            "settings": "PostgreSQL",
        }
    path, _, durability = store.partition("?durability=")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={durability.upper() or 'NORMAL'}")
        conn.execute(FLOOR_TABLE)
        settings = sqlite_settings(conn)
        began, before = 0.0, 0
        for row in rows:
            if row[0] == 0:
                before, began = stored_bytes(path), time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO floor_results VALUES (?, ?)", row)
            conn.execute("COMMIT")
        seconds = time.perf_counter() - began
    finally:
        conn.close()
    after = stored_bytes(path)
    return {"seconds": seconds, "bytes_before": before, "bytes_after": after, "settings": settings}


async def _floor_postgres(url: str, rows: list[tuple[int, str]]) -> tuple[float, int]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute(FLOOR_TABLE.replace("INTEGER", "BIGINT", 1))
        await conn.commit()
        began, before = 0.0, 0
        for row in rows:
            if row[0] == 0:
                before, began = stored_bytes(url), time.perf_counter()
            await conn.execute("INSERT INTO floor_results VALUES (%s, %s)", row)
            await conn.commit()
        return time.perf_counter() - began, before


# --------------------------------------------------------------------------- LangGraph


class LoopState(TypedDict):
    step: int
    result: dict[str, Any]


def langgraph_loop(store: str, steps: int) -> dict[str, Any]:
    from langgraph.graph import END, START, StateGraph

    def produce(state: LoopState) -> dict[str, Any]:
        return {"step": state["step"] + 1, "result": result(state["step"])}

    def again(state: LoopState) -> str:
        return "produce" if state["step"] < steps else END

    builder = StateGraph(LoopState)
    builder.add_node("produce", produce)
    builder.add_edge(START, "produce")
    builder.add_conditional_edges("produce", again)
    config: Any = {"configurable": {"thread_id": THREAD}, "recursion_limit": steps + 10}

    if store.startswith("postgresql://"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(store) as server_saver:
            server_saver.setup()
            before = stored_bytes(store)
            graph = builder.compile(checkpointer=server_saver)
            began = time.perf_counter()
            final = graph.invoke({"step": 0, "result": {}}, config, durability="sync")
            seconds = time.perf_counter() - began
        settings = "PostgreSQL"
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(store) as saver:
            saver.setup()
            settings = sqlite_settings(saver.conn)
            before = stored_bytes(store)
            graph = builder.compile(checkpointer=saver)
            began = time.perf_counter()
            final = graph.invoke({"step": 0, "result": {}}, config, durability="sync")
            seconds = time.perf_counter() - began
    if final["step"] != steps:
        raise SystemExit(f"the graph stopped at step {final['step']} of {steps}")
    return {
        "seconds": seconds,
        "bytes_before": before,
        "bytes_after": stored_bytes(store),
        "settings": settings,
    }


# --------------------------------------------------------------------------- DBOS


def dbos_loop(store: str, steps: int) -> dict[str, Any]:
    from dbos import DBOS
    from dbos._dbos import _get_dbos_instance

    url = store if store.startswith("postgresql://") else f"sqlite:///{store}"
    DBOS(config={"name": "peers-bench", "system_database_url": url, "log_level": "WARNING"})

    @DBOS.step()
    def produce(step: int) -> dict[str, Any]:
        return result(step)

    @DBOS.workflow()
    def loop(steps: int) -> float:
        began = time.perf_counter()
        for step in range(steps):
            produce(step)
        return time.perf_counter() - began

    DBOS.launch()
    try:
        if url.startswith("sqlite"):
            # DBOS sets no journal mode or `synchronous` on its connections: what a new one has is theirs.
            with _get_dbos_instance()._sys_db.engine.connect() as conn:
                settings = sqlite_settings(conn.connection.dbapi_connection)  # type: ignore[arg-type]
        else:
            settings = "PostgreSQL"
        before = stored_bytes(store)
        seconds = loop(steps)
    finally:
        DBOS.destroy()
    return {
        "seconds": seconds,
        "bytes_before": before,
        "bytes_after": stored_bytes(store),
        "settings": settings,
    }


def main() -> None:
    system, variant, store, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if system == "ratchet":
        figures = ratchet_loop(variant, store, steps)
    elif system == "langgraph":
        figures = langgraph_loop(store, steps)
    elif system == "dbos":
        figures = dbos_loop(store, steps)
    elif system == "floor":
        figures = floor_loop(store, steps)
    else:
        raise SystemExit(f"unknown system {system!r}")
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()

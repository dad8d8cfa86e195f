"""Where RatchetSaver's bytes go: a graph that appends one message per step, then each table's size.

Runs N steps (2,000 by default) of a ``StateGraph`` whose node appends one
``AIMessage`` of about 300 characters (``add_messages``), ``durability="sync"``,
on a fresh SQLite file (or a PostgreSQL database with ``--url``), and prints,
per LangGraph table: rows, the bytes of the rows' columns, the bytes on disk
(SQLite's ``dbstat``: pages of the table and its indexes; PostgreSQL's
``pg_total_relation_size``) and that per step, against the message text.
Since migration 0022 a checkpoint's row holds the pending writes of the first
task that wrote on it: ``langgraph_writes`` holds only the others.

``--turns`` runs each step as a run of its own (a chat's turns: the graph is
invoked with no new message and its node adds one).

Run: ``python bench/langgraph_storage.py [--steps 2000] [--turns] [--url postgresql://...]``
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from ratchet.integrations.langgraph import RatchetSaver

TABLES = ("langgraph_checkpoints", "langgraph_writes", "langgraph_values")


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


_WORDS = [
    "the",
    "a",
    "model",
    "tool",
    "call",
    "result",
    "step",
    "plan",
    "file",
    "test",
    "error",
    "fix",
    "read",
    "write",
    "check",
    "run",
    "agent",
    "user",
    "answer",
    "because",
    "then",
    "when",
    "first",
    "next",
    "after",
    "before",
    "should",
    "could",
    "would",
    "must",
    "found",
    "changed",
    "returns",
    "value",
    "list",
    "thread",
    "state",
    "message",
    "node",
    "graph",
    "input",
    "output",
    "search",
    "query",
    "page",
    "line",
    "function",
    "module",
    "store",
    "table",
    "row",
    "column",
    "index",
    "query",
    "lease",
    "fence",
    "commit",
    "retry",
    "timeout",
    "budget",
    "cost",
    "token",
    "prompt",
    "reply",
    "summary",
    "note",
    "it",
    "this",
    "that",
    "we",
    "you",
    "they",
    "is",
    "was",
    "are",
    "be",
    "not",
    "and",
    "or",
    "but",
    "if",
    "so",
    "of",
    "to",
    "in",
    "on",
    "for",
    "with",
    "at",
    "by",
    "from",
    "as",
]


def _text(step: int) -> str:
    """About 300 characters of words drawn at random (seeded by the step): text that compresses about
    as English does, not a repeated phrase."""
    pick = random.Random(step)
    return f"step {step}: " + " ".join(pick.choice(_WORDS) for _ in range(80))[:290]


def _graph(saver: RatchetSaver, steps: int) -> Any:
    def think(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage(_text(len(state["messages"])), id=f"m{len(state['messages'])}")]}

    def more(state: State) -> str:
        return "think" if len(state["messages"]) < steps else END

    builder = StateGraph(State)
    builder.add_node("think", think)
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", more)
    return builder.compile(checkpointer=saver)


async def _run(url: str, steps: int, turns: bool) -> int:
    """Run the steps (in one run, or one run per step); the message text's bytes."""
    async with RatchetSaver.from_conn_string(url) as saver:
        config: Any = {"configurable": {"thread_id": "t1"}, "recursion_limit": steps + 10}
        if turns:
            for turn in range(1, steps + 1):
                await _graph(saver, turn).ainvoke({"messages": []}, config, durability="sync")
        else:
            await _graph(saver, steps).ainvoke({"messages": []}, config, durability="sync")
        graph = _graph(saver, steps)
        state = await graph.aget_state(config)
        return sum(len(m.content.encode()) for m in state.values["messages"])


def _sqlite_sizes(path: Path) -> dict[str, tuple[int, int, int]]:
    import sqlite3

    conn = sqlite3.connect(path)
    sizes = {}
    for table in TABLES:
        rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
        lengths = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in columns)
        payload = conn.execute(f"SELECT coalesce(sum({lengths}), 0) FROM {table}").fetchone()[0]
        names = [table] + [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE tbl_name = ? AND type = 'index'", (table,)
            )
        ]
        disk = sum(
            conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?", (name,)).fetchone()[0]
            for name in names
        )
        sizes[table] = (rows, payload, disk)
    conn.close()
    return sizes


def _postgres_sizes(url: str) -> dict[str, tuple[int, int, int]]:
    import psycopg

    sizes = {}
    with psycopg.connect(url) as conn:
        for table in TABLES:
            rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
            payload = conn.execute(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t").fetchone()[
                0
            ]  # type: ignore[index]
            disk = conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()[0]  # type: ignore[index]
            sizes[table] = (rows, int(payload), int(disk))
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--turns", action="store_true", help="one run (graph.ainvoke) per step")
    parser.add_argument("--url", help="a PostgreSQL database to use (its LangGraph tables must be empty)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lg.db"
        url = args.url or f"sqlite:///{path}"
        text = asyncio.run(_run(url, args.steps, args.turns))
        sizes = _postgres_sizes(url) if args.url else _sqlite_sizes(path)
    print(f"{args.steps} steps, {text:,} bytes of message text")
    print(f"{'table':24} {'rows':>7} {'row bytes':>11} {'on disk':>11} {'disk/step':>10}")
    for table, (rows, payload, disk) in sizes.items():
        print(f"{table:24} {rows:>7,} {payload:>11,} {disk:>11,} {disk / args.steps:>10,.0f}")
    total = sum(disk for _, _, disk in sizes.values())
    payload = sum(p for _, p, _ in sizes.values())
    print(f"{'total':24} {'':>7} {payload:>11,} {total:>11,} {total / args.steps:>10,.0f}")
    print(f"on disk / message text: {total / text:.2f}")


if __name__ == "__main__":
    main()

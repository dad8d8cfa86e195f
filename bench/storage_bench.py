"""What an agent conversation costs in storage: bytes stored against the unique payload.

A workflow holds a 200-turn conversation with the scripted model: a ~2 kB
system prompt, six tool schemas (~2.4 kB together) and a history that grows
by two messages a turn (the model's answer, ~250 bytes, and a tool result,
~300 bytes). Each turn is one journaled model call whose input carries the
whole request, as ``ctx.call_model`` records it.

The unique payload is what the conversation holds once: the distinct messages
(system prompt included) and the tool schemas, as compact JSON. Bytes stored:

- journal: the sum of the task's ``operations.input`` and ``.output`` and of
  its ``contents`` rows (hash and body), the bytes the journal itself holds;
- file (SQLite): the database file after a WAL checkpoint and VACUUM, every
  table and index of the store (events, the task, its checkpoints) included;
  relations (PostgreSQL): ``pg_total_relation_size`` of operations and contents.

Target (issue 17, item 5): journal bytes <= 2x the unique payload, growing
linearly with the new content per turn (the figure at 100 turns and 200 turns
shows the growth). Each line also gives the time per turn (a journaled model
call and the workflow around it), to show what the encoding costs.
PostgreSQL is a throwaway cluster (``tests/helpers/pg.py``).

Run: ``python bench/storage_bench.py [--turns N] [--only sqlite|postgresql]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

import ratchet

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
from tests.helpers.pg import Cluster, throwaway_cluster  # noqa: E402 (after the path above)

SYSTEM = "You are a careful operations agent. " + " ".join(
    f"Rule {i}: check the service's state before acting and report what you changed." for i in range(24)
)
TASK = "Bring every service of the staging cluster to the latest release, one at a time."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{name}",
            "description": f"{name.capitalize()} one service of the cluster and say what happened.",
            "parameters": {
                "type": "object",
                "properties": {
                    "service": {
                        "type": "string",
                        "description": "the service's name, as the cluster lists it",
                    },
                    "version": {"type": "string", "description": "the release to act on, e.g. 2.14.1"},
                    "dry_run": {"type": "boolean", "description": "say what would happen, change nothing"},
                },
                "required": ["service"],
            },
        },
    }
    for name in ("inspect", "upgrade", "rollback", "restart", "drain", "verify")
]


def answer(turn: int) -> str:
    return f"Turn {turn}: service-{turn:03d} looks healthy; I will upgrade it next and check its probes. " + (
        "Nothing else needs attention before that step. " * 3
    )


def observation(turn: int) -> str:
    return json.dumps(
        {"turn": turn, "service": f"service-{turn:03d}", "status": "upgraded", "probes": ["live", "ready"]}
    ) + (" log: rollout complete, 3/3 replicas available, no restarts." * 4)


@ratchet.workflow
async def conversation(ctx: ratchet.Context, turns: int) -> int:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for turn in range(turns):
        reply = await ctx.call_model({"purpose": "act", "messages": messages, "tools": TOOLS})
        messages = [
            *messages,
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": observation(turn)},
        ]
    return len(messages)


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def unique_payload(turns: int) -> int:
    """The distinct messages and the tool schemas, each once, as compact JSON bytes."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for turn in range(turns):
        messages += [
            {"role": "assistant", "content": answer(turn)},
            {"role": "user", "content": observation(turn)},
        ]
    return sum(_compact(m) for m in messages) + _compact(TOOLS)


def write_script(path: Path, turns: int) -> None:
    path.write_text(json.dumps({"act": [{"content": answer(turn)} for turn in range(turns)]}))


async def run_conversation(url: str, script: Path, turns: int) -> tuple[str, float]:
    """Run the conversation; return its task id and the seconds per turn it took."""
    async with ratchet.Runtime(url) as runtime:
        began = time.perf_counter()
        task = await runtime.run(conversation, {"turns": turns}, model=f"scripted:{script}")
        seconds = time.perf_counter() - began
    assert task.status == "completed", task.error
    return task.id, seconds / turns


def _has_contents(tables: set[str]) -> bool:
    return "contents" in tables


def sqlite_bytes(path: Path, task_id: str) -> dict[str, int]:
    conn = sqlite3.connect(path)
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    journal = conn.execute(
        "SELECT COALESCE(SUM(LENGTH(CAST(input AS BLOB)) + COALESCE(LENGTH(CAST(output AS BLOB)), 0)), 0)"
        " FROM operations WHERE task_id = ?",
        (task_id,),
    ).fetchone()[0]
    if _has_contents(tables):
        journal += conn.execute(
            "SELECT COALESCE(SUM(LENGTH(hash) + COALESCE(LENGTH(prev), 0) + LENGTH(CAST(body AS BLOB))), 0)"
            " FROM contents WHERE task_id = ?",
            (task_id,),
        ).fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    return {"journal": int(journal), "file": path.stat().st_size}


def postgres_bytes(url: str, task_id: str) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        tables = {
            name for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        row = conn.execute(
            "SELECT COALESCE(SUM(octet_length(input) + COALESCE(octet_length(output), 0)), 0)"
            " FROM operations WHERE task_id = %s",
            (task_id,),
        ).fetchone()
        journal = int(row[0]) if row else 0
        relations = ["operations"]
        if _has_contents(tables):
            row = conn.execute(
                "SELECT COALESCE(SUM(octet_length(hash) + COALESCE(octet_length(prev), 0)"
                " + octet_length(body)), 0) FROM contents WHERE task_id = %s",
                (task_id,),
            ).fetchone()
            journal += int(row[0]) if row else 0
            relations.append("contents")
        conn.execute("VACUUM FULL")
        size = sum(
            int(conn.execute("SELECT pg_total_relation_size(%s)", (name,)).fetchone()[0])  # type: ignore[index]
            for name in relations
        )
    return {"journal": journal, "file": size}


def report(store: str, turns: int, figures: dict[str, int]) -> None:
    unique = unique_payload(turns)
    ratio = figures["journal"] / unique
    verdict = "met" if ratio <= 2 else "NOT met"
    place = "file" if store == "SQLite" else "relations"
    print(
        f"  {store:<10} {turns:4d} turns  unique {unique / 1e3:8.1f} kB"
        f"  journal {figures['journal'] / 1e3:8.1f} kB"
        f"  ({ratio:6.2f}x, target <= 2x: {verdict})  {place} {figures['file'] / 1e3:9.1f} kB"
        f"  ({figures['file'] / unique:6.2f}x)  {figures['us_per_turn'] / 1e3:6.2f} ms/turn"
    )


def measure_sqlite(workdir: Path, script: Path, turns: int) -> dict[str, int]:
    path = workdir / f"storage-{turns}.db"
    task_id, per_turn = asyncio.run(run_conversation(f"sqlite:///{path}", script, turns))
    return {**sqlite_bytes(path, task_id), "us_per_turn": int(per_turn * 1e6)}


def measure_postgresql(cluster: Cluster, script: Path, turns: int) -> dict[str, int]:
    url = cluster.create_database()
    task_id, per_turn = asyncio.run(run_conversation(url, script, turns))
    return {**postgres_bytes(url, task_id), "us_per_turn": int(per_turn * 1e6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, load {os.getloadavg()[0]:.2f}"
    )
    sizes = sorted({args.turns // 2, args.turns})
    with tempfile.TemporaryDirectory(prefix="ratchet-storage-bench-") as tmp:
        workdir = Path(tmp)
        script = workdir / "script.json"
        write_script(script, args.turns)
        if args.only != "postgresql":
            for turns in sizes:
                report("SQLite", turns, measure_sqlite(workdir, script, turns))
        if args.only != "sqlite":
            with throwaway_cluster() as cluster:
                for turns in sizes:
                    report("PostgreSQL", turns, measure_postgresql(cluster, script, turns))


if __name__ == "__main__":
    main()

"""What durability costs: overhead per tool call, and how fast killed tasks come back.

1. Overhead per op: a no-op tool with side effects (``risk="write_local"``,
   so an intent and a result are committed, each with its events and a lease
   check) called N times through ``ctx.call_tool`` inside a workflow, minus the
   same tool called N times directly; beside raw sqlite3 ``BEGIN IMMEDIATE;
   INSERT; COMMIT`` of a journal-sized row, measured in the same run.
   Target: overhead per op <= 3x one raw insert+commit.
2. Resume: 1,000 tasks, each with 20 journaled tool calls, are run by a worker
   subprocess that is killed with SIGKILL once every task has made its 20
   calls. A new worker then takes them all over; the figure is the time until
   every task has replayed its journal and made its first live call.
   Target: under 5 s.

Run: ``python bench/durable_bench.py [--ops N] [--tasks N] [--ops-per-task N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ratchet
from ratchet.engine import Worker, WorkerIdentity
from ratchet.store import open_store

PAYLOAD = {"request": "noop", "target": "service-a", "note": "x" * 40}
LEASE_TTL = 1.0


@ratchet.tool
async def noop(request: str, target: str, note: str) -> dict:
    """Do nothing, with side effects as far as the journal knows (async: no thread hop)."""
    return {"ok": True}


@ratchet.workflow(tools=[noop])
async def loop(ctx: ratchet.Context, ops: int) -> float:
    began = time.perf_counter()
    for _ in range(ops):
        await ctx.call_tool("noop", PAYLOAD)
    return time.perf_counter() - began


@ratchet.workflow(tools=[noop])
async def park(ctx: ratchet.Context, ops: int) -> None:
    """Make `ops` calls, one more to say it is back, then wait forever (for the resume bench)."""
    for _ in range(ops):
        await ctx.call_tool("noop", PAYLOAD)
    await ctx.call_tool("noop", {**PAYLOAD, "request": "back"})
    await asyncio.Event().wait()


def raw_insert_commit(path: Path, count: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute(
        "CREATE TABLE ops (task_id TEXT, seq INTEGER, kind TEXT, name TEXT, status TEXT,"
        " input TEXT, output TEXT, started INTEGER, PRIMARY KEY (task_id, seq))"
    )
    payload = json.dumps(PAYLOAD)
    rows = [("bench", i, "tool", "noop", "succeeded", payload, '{"ok":true}', i) for i in range(count)]
    began = time.perf_counter()
    for row in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO ops VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
        conn.execute("COMMIT")
    seconds = time.perf_counter() - began
    conn.close()
    return seconds / count


async def direct(count: int) -> float:
    context = ratchet.ToolContext(task_id="bench", seq=0, attempt=1, idempotency_key="bench:0")
    began = time.perf_counter()
    for _ in range(count):
        await noop.invoke(PAYLOAD, context)
    return (time.perf_counter() - began) / count


async def through_context(url: str, count: int) -> float:
    async with ratchet.Runtime(url) as runtime:
        task = await runtime.run(loop, {"ops": count})
    assert task.status == "completed", task.error
    return float(task.result) / count


async def overhead(workdir: Path, count: int) -> dict[str, float]:
    raw = raw_insert_commit(workdir / "raw.db", count)
    plain = await direct(count)
    durable = await through_context(f"sqlite:///{workdir / 'overhead.db'}", count)
    return {"raw": raw, "direct": plain, "durable": durable, "overhead": durable - plain}


# --------------------------------------------------------------------------- resume


def _submit_and_park(url: str, tasks: int, ops: int) -> list[str]:
    async def submit() -> list[str]:
        async with ratchet.Runtime(url) as runtime:
            return [await runtime.submit(park, {"ops": ops}) for _ in range(tasks)]

    return asyncio.run(submit())


def _count_back(conn: sqlite3.Connection, seq: int) -> int:
    """How many tasks have made their call at `seq`, read from the file beside the store."""
    query = "SELECT COUNT(*) FROM operations WHERE seq = ? AND status = 'succeeded'"
    return int(conn.execute(query, (seq,)).fetchone()[0])


def _run_worker_until(url: str, tasks: int, ops: int) -> None:
    """A worker subprocess parks every task, then is killed with SIGKILL."""
    code = (
        f"import asyncio, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import durable_bench as b;"
        "from ratchet.engine import Worker; from ratchet.store import open_store\n"
        "async def main():\n"
        f"    store = await open_store({url!r})\n"
        f"    await Worker(store, concurrency={tasks}, lease_ttl={LEASE_TTL!r}, poll_interval=0.05).run()\n"
        "asyncio.run(main())"
    )
    worker = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 600
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        while _count_back(conn, ops) < tasks:
            if worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the first worker stopped before parking every task")
            time.sleep(0.5)
    finally:
        conn.close()
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()


async def _resume_all(url: str, tasks: int, back_seq: int) -> float:
    store = await open_store(url)
    stop = asyncio.Event()
    worker = Worker(
        store,
        identity=WorkerIdentity(name="bench-resumer"),
        concurrency=tasks,
        lease_ttl=30.0,
        poll_interval=0.05,
    )
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    began = time.perf_counter()
    running = asyncio.create_task(worker.run(stop))
    try:
        while _count_back(conn, back_seq) < tasks:
            await asyncio.sleep(0.02)  # the bench's own clock; the worker runs beside it
        return time.perf_counter() - began
    finally:
        conn.close()
        stop.set()
        await running
        await store.close()


def resume_bench(workdir: Path, tasks: int, ops: int) -> dict[str, float]:
    url = f"sqlite:///{workdir / 'resume.db'}"
    _submit_and_park(url, tasks, ops)
    _run_worker_until(url, tasks, ops)
    # Forget each task's "back" call: coming back means replaying `ops` calls, then one live call.
    conn = sqlite3.connect(workdir / "resume.db")
    conn.execute("DELETE FROM operations WHERE seq = ?", (ops,))
    conn.commit()
    conn.close()
    time.sleep(LEASE_TTL + 0.2)  # the killed worker's leases run out
    return {"tasks": tasks, "seconds": asyncio.run(_resume_all(url, tasks, ops))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--ops-per-task", type=int, default=20)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus"
    )
    with tempfile.TemporaryDirectory(prefix="ratchet-durable-bench-") as tmp:
        figures = asyncio.run(overhead(Path(tmp), args.ops))
        ratio = figures["overhead"] / figures["raw"]
        print(f"overhead per tool op ({args.ops} ops, no-op tool with side effects):")
        print(f"  direct call                 {figures['direct'] * 1e6:9.1f} us")
        print(f"  through ctx.call_tool       {figures['durable'] * 1e6:9.1f} us")
        print(f"  durable overhead            {figures['overhead'] * 1e6:9.1f} us")
        print(f"  raw insert+commit           {figures['raw'] * 1e6:9.1f} us")
        verdict = "met" if ratio <= 3 else "NOT met"
        print(f"  overhead / raw              {ratio:9.2f}x   (target <= 3x: {verdict})")
        resumed = resume_bench(Path(tmp), args.tasks, args.ops_per_task)
        print(f"resume after SIGKILL: {args.tasks} tasks x {args.ops_per_task} journaled ops")
        print(
            f"  all back to running in      {resumed['seconds']:9.2f} s"
            f"   (target < 5 s: {'met' if resumed['seconds'] < 5 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()

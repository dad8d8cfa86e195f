"""What durability costs: overhead per tool call, and how fast killed tasks come back.

1. Overhead per op on SQLite: a no-op tool with side effects
   (``risk="write_local"``, so an intent and a result are committed, each in
   a transaction fenced by the worker's lease) called N times through
   ``ctx.call_tool`` inside a workflow, minus the same tool called N times
   directly; and the same for a ``read_only`` tool (its result alone is
   committed); beside raw sqlite3 ``BEGIN IMMEDIATE; INSERT; COMMIT`` of a
   journal-sized row, measured in the same run (before and after the calls,
   averaged). Targets: side-effect call <= 3x one raw insert+commit (1.5x the
   two commits it needs), read-only call <= 1.5x. A side-effect tool that takes its
   idempotency key (``keyed``) is printed beside them, with no target: its result may
   ride on the next call's intent commit (docs/durability.md, "Results that ride
   along"). The same ratios in CPU time
   (``time.process_time``) are printed beside: other processes on the machine
   move them far less than the wall-clock ones.
2. Overhead per op on PostgreSQL (a throwaway cluster started as
   bench/scale_bench.py does; ``--no-postgres`` skips it): the side-effect
   call, beside raw psycopg ``INSERT`` then ``COMMIT`` on an
   ``AsyncConnection`` (the store's driver mode). Target: <= 2x.
3. Resume: 1,000 tasks, each with 20 journaled tool calls, are run by a worker
   subprocess that is killed with SIGKILL once every task has made its 20
   calls. A new worker then takes them all over; the figure is the time until
   every task has replayed its journal and made its first live call.
   Target: under 5 s. Both workers admit this file as code (``allow_code``):
   a worker loads only code under its project root (the current directory)
   unless told otherwise, and the bench may be run from anywhere. A task
   that cannot run (its code refused or missing, failed) or a worker that
   stops ends the bench at once with the task's own line, and so does a
   minute without progress.

Run: ``python bench/durable_bench.py [--ops N] [--pg-ops N] [--tasks N] [--ops-per-task N] [--no-postgres]
[--load N] [--freeze]``

Items 1 and 2 are measured twice: on the machine as it is, then again beside
``--load`` busy processes (2 unless told; 0 skips it), each a Python loop
spinning on a core, so the figures under a CPU load are printed beside the
quiet ones.

``--freeze`` calls ``gc.freeze()`` once each runtime is open, before its calls, as ``ratchet worker``
and ``ratchet run`` do after start-up: the per-call figures of a process that keeps the cyclic
collector off what start-up made.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
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
from typing import Any

import ratchet
from ratchet.engine import Worker, WorkerIdentity
from ratchet.store import open_store

PAYLOAD = {"request": "noop", "target": "service-a", "note": "x" * 40}
LEASE_TTL = 1.0
# The workflows below, run as `python bench/durable_bench.py`, are named by this file's path; a
# worker whose current directory is elsewhere refuses it unless admitted (docs/durability.md).
THIS_FILE = str(Path(__file__).resolve())
FREEZE = False  # --freeze
STALLED = 60.0  # seconds without a task making a call before the resume bench gives up


@ratchet.tool
async def noop(request: str, target: str, note: str) -> dict:
    """Do nothing, with side effects as far as the journal knows (async: no thread hop)."""
    return {"ok": True}


@ratchet.tool(risk="read_only")
async def lookup(request: str, target: str, note: str) -> dict:
    """Do nothing, read-only: its result alone is journaled (one commit)."""
    return {"ok": True}


@ratchet.tool
async def keyed(request: str, target: str, note: str, ctx: ratchet.ToolContext) -> dict:
    """Do nothing, with side effects keyed by the call's idempotency key: its result may ride along."""
    return {"ok": True}


@ratchet.workflow(tools=[noop, lookup, keyed])
async def loop(ctx: ratchet.Context, ops: int, tool: str = "noop") -> list[float]:
    """The calls' wall-clock and CPU seconds."""
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(ops):
        await ctx.call_tool(tool, PAYLOAD)
    return [time.perf_counter() - began, time.process_time() - cpu]


@ratchet.workflow(tools=[noop])
async def park(ctx: ratchet.Context, ops: int) -> None:
    """Make `ops` calls, one more to say it is back, then wait forever (for the resume bench)."""
    for _ in range(ops):
        await ctx.call_tool("noop", PAYLOAD)
    await ctx.call_tool("noop", {**PAYLOAD, "request": "back"})
    await asyncio.Event().wait()


def raw_insert_commit(path: Path, count: int) -> tuple[float, float]:
    """Seconds per raw ``BEGIN IMMEDIATE; INSERT; COMMIT``: wall clock, CPU."""
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
    began, cpu = time.perf_counter(), time.process_time()
    for row in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO ops VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
        conn.execute("COMMIT")
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    conn.close()
    return seconds / count, cpu / count


async def direct(count: int) -> float:
    return (await direct_times(count))[0]


async def direct_times(count: int) -> tuple[float, float]:
    """Seconds per direct call of the tool: wall clock, CPU."""
    context = ratchet.ToolContext(task_id="bench", seq=0, attempt=1, idempotency_key="bench:0")
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        await noop.invoke(PAYLOAD, context)
    return (time.perf_counter() - began) / count, (time.process_time() - cpu) / count


async def through_context(url: str, count: int, tool: str = "noop") -> float:
    return (await through_context_times(url, count, tool))[0]


async def through_context_times(url: str, count: int, tool: str = "noop") -> tuple[float, float]:
    """Seconds per call through ``ctx.call_tool``: wall clock, CPU."""
    async with ratchet.Runtime(url) as runtime:
        if FREEZE:
            gc.freeze()  # as `ratchet worker` and `ratchet run` do once started
        task = await runtime.run(loop, {"ops": count, "tool": tool})
    assert task.status == "completed", task.error
    wall, cpu = task.result
    return wall / count, cpu / count


async def overhead(workdir: Path, count: int) -> dict[str, float]:
    """Per call: the figures in wall-clock seconds, and each again in CPU seconds (``*_cpu``)."""
    raw_before = raw_insert_commit(workdir / "raw.db", count)
    plain = await direct_times(count)
    durable = await through_context_times(f"sqlite:///{workdir / 'overhead.db'}", count)
    read_only = await through_context_times(f"sqlite:///{workdir / 'read_only.db'}", count, "lookup")
    riding = f"sqlite:///{workdir / 'keyed.db'}?ride_along=on"  # results ride along only when told
    keyed_call = await through_context_times(riding, count, "keyed")
    raw_after = raw_insert_commit(workdir / "raw2.db", count)
    figures = {}
    for i, suffix in enumerate(("", "_cpu")):
        figures |= {
            f"raw{suffix}": (raw_before[i] + raw_after[i]) / 2,
            f"direct{suffix}": plain[i],
            f"durable{suffix}": durable[i],
            f"overhead{suffix}": durable[i] - plain[i],
            f"read_only{suffix}": read_only[i] - plain[i],
            f"keyed{suffix}": keyed_call[i] - plain[i],
        }
    return figures


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


def _calls_made(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM operations WHERE status = 'succeeded'").fetchone()[0])


def _cannot_run(conn: sqlite3.Connection) -> str | None:
    """One line naming a task that will not park (waiting for its code, failed...), with its last
    event's message; None while every task is queued or running."""
    row = conn.execute(
        "SELECT id, status, waiting_on FROM tasks WHERE status NOT IN ('queued', 'running') LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    task_id, status, waiting_on = row
    said = conn.execute(
        "SELECT message FROM events WHERE task_id = ? ORDER BY seq DESC LIMIT 1", (task_id,)
    ).fetchone()
    state = f"{status}({waiting_on})" if waiting_on else status
    return f"task {task_id} is {state}: {said[0] if said else 'no event says why'}"


class _Watch:
    """Ends the resume bench with one line, at once, when its tasks cannot get where it waits for
    them: a task that stopped running, a worker process that exited, or no call made for
    `STALLED` seconds."""

    def __init__(self, conn: sqlite3.Connection, what: str) -> None:
        self.conn, self.what = conn, what
        self.made, self.moved = -1, time.monotonic()
        self.looked = 0.0

    def check(self, worker: subprocess.Popen[bytes] | None = None) -> None:
        if time.monotonic() - self.looked < 0.5:  # twice a second: the resumer shares this process
            return
        self.looked = time.monotonic()
        problem = _cannot_run(self.conn)
        if problem is None and worker is not None and worker.poll() is not None:
            problem = f"the worker exited with code {worker.returncode}"
        made = _calls_made(self.conn)
        if made != self.made:
            self.made, self.moved = made, time.monotonic()
        elif problem is None and time.monotonic() - self.moved > STALLED:
            problem = f"no task made a call for {STALLED:g} s ({made} calls made)"
        if problem is not None:
            raise SystemExit(f"resume bench: {self.what}: {problem}")


def _run_worker_until(url: str, tasks: int, ops: int) -> None:
    """A worker subprocess parks every task, then is killed with SIGKILL."""
    code = (
        "import asyncio\n"
        "from ratchet.engine import Worker; from ratchet.store import open_store\n"
        "async def main():\n"
        f"    store = await open_store({url!r})\n"
        f"    await Worker(store, concurrency={tasks}, lease_ttl={LEASE_TTL!r}, poll_interval=0.05,"
        f" allow_code=[{THIS_FILE!r}]).run()\n"
        "asyncio.run(main())"
    )
    worker = subprocess.Popen([sys.executable, "-c", code])
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    watch = _Watch(conn, "the first worker did not park every task")
    try:
        while _count_back(conn, ops) < tasks:
            watch.check(worker)
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
        allow_code=[THIS_FILE],
    )
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    watch = _Watch(conn, "the second worker did not bring every task back")
    began = time.perf_counter()
    running = asyncio.create_task(worker.run(stop))
    try:
        while _count_back(conn, back_seq) < tasks:
            if running.done():
                running.result()  # the worker raised: its error, not a wait
                raise SystemExit("resume bench: the second worker stopped before every task was back")
            watch.check()
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


# --------------------------------------------------------------------------- PostgreSQL


def postgres_overhead(count: int) -> dict[str, Any]:
    """The side-effect and read-only calls on a throwaway PostgreSQL, beside raw psycopg."""
    sys.path.insert(0, str(Path(__file__).parent))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for the tests' throwaway cluster
    from tests.helpers.pg import throwaway_cluster

    from scale_bench import raw_async

    with throwaway_cluster() as cluster:
        with cluster.admin() as conn:
            row = conn.execute("SHOW server_version").fetchone()
        with cluster.database() as raw_url, cluster.database() as url, cluster.database() as ro_url:
            raw_before = asyncio.run(raw_async(raw_url, count))
            plain = asyncio.run(direct(count))
            durable = asyncio.run(through_context(url, count))
            read_only = asyncio.run(through_context(ro_url, count, "lookup"))
        with cluster.database() as keyed_url:
            riding = keyed_url + ("&" if "?" in keyed_url else "?") + "ride_along=on"
            keyed_call = asyncio.run(through_context(riding, count, "keyed"))
        with cluster.database() as raw_url:  # raw_async makes its table: a fresh database
            raw_after = asyncio.run(raw_async(raw_url, count))
    return {
        "server": f"PostgreSQL {row[0] if row else '?'}, fsync off",
        "raw": (raw_before + raw_after) / 2,
        "overhead": durable - plain,
        "read_only": read_only - plain,
        "keyed": keyed_call - plain,
    }


def _ratio(label: str, ratio: float, target: float) -> None:
    verdict = "met" if ratio <= target else f"NOT met, {ratio / target:.2f}x the target"
    print(f"  {label:<27} {ratio:9.2f}x   (target <= {target:g}x: {verdict})")


def _report_overhead(figures: dict[str, float], pg: dict[str, Any] | None, ops: int, pg_ops: int) -> None:
    print(f"overhead per tool op on SQLite ({ops} ops, durability=normal):")
    print(f"  direct call                 {figures['direct'] * 1e6:9.1f} us")
    print(f"  side-effect call overhead   {figures['overhead'] * 1e6:9.1f} us   (intent + result)")
    print(f"  read-only call overhead     {figures['read_only'] * 1e6:9.1f} us   (result only)")
    print(f"  raw insert+commit           {figures['raw'] * 1e6:9.1f} us")
    _ratio("side-effect / raw", figures["overhead"] / figures["raw"], 3.0)
    _ratio("read-only / raw", figures["read_only"] / figures["raw"], 1.5)
    print(
        f"  in CPU time: side-effect {figures['overhead_cpu'] * 1e6:.1f} us, read-only "
        f"{figures['read_only_cpu'] * 1e6:.1f} us, raw {figures['raw_cpu'] * 1e6:.1f} us"
    )
    _ratio("side-effect / raw (CPU)", figures["overhead_cpu"] / figures["raw_cpu"], 3.0)
    _ratio("read-only / raw (CPU)", figures["read_only_cpu"] / figures["raw_cpu"], 1.5)
    print(
        f"  keyed side-effect call      {figures['keyed'] * 1e6:9.1f} us   "
        f"(CPU {figures['keyed_cpu'] * 1e6:.1f} us; its result rides on the next intent)"
    )
    if pg is not None:
        print(f"overhead per tool op on PostgreSQL ({pg_ops} ops; {pg['server']}):")
        print(f"  side-effect call overhead   {pg['overhead'] * 1e6:9.1f} us   (intent + result)")
        print(f"  read-only call overhead     {pg['read_only'] * 1e6:9.1f} us   (result only)")
        print(f"  raw insert+commit (async)   {pg['raw'] * 1e6:9.1f} us")
        _ratio("side-effect / raw", pg["overhead"] / pg["raw"], 2.0)
        keyed_us = pg["keyed"] * 1e6
        print(f"  keyed side-effect call      {keyed_us:9.1f} us   (its result rides on the next intent)")


class CpuLoad:
    """`processes` busy loops beside the bench (each a Python process spinning), stopped on exit."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._spinning: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> CpuLoad:
        spin = [sys.executable, "-c", "while True: pass"]
        self._spinning = [subprocess.Popen(spin) for _ in range(self.processes)]
        time.sleep(0.5)  # let them reach the run queue before the first figure
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self._spinning:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--ops-per-task", type=int, default=20)
    parser.add_argument("--pg-ops", type=int, default=2000)
    parser.add_argument("--no-postgres", action="store_true", help="measure SQLite only")
    parser.add_argument(
        "--load",
        type=int,
        default=2,
        metavar="N",
        help="measure the overhead again beside N busy processes (0: only on the machine as it is)",
    )
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="gc.freeze() once the runtime is open, as `ratchet worker` and `ratchet run` do",
    )
    args = parser.parse_args()
    if args.load < 0:
        parser.error(f"--load takes a number of processes, 0 or more, not {args.load}")
    global FREEZE
    FREEZE = args.freeze
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="ratchet-durable-bench-") as tmp:
        for part in ("quiet", "loaded"):
            (Path(tmp) / part).mkdir()
        figures = asyncio.run(overhead(Path(tmp) / "quiet", args.ops))
        pg = None if args.no_postgres else postgres_overhead(args.pg_ops)
        _report_overhead(figures, pg, args.ops, args.pg_ops)
        if args.load:
            with CpuLoad(args.load):
                figures = asyncio.run(overhead(Path(tmp) / "loaded", args.ops))
                pg = None if args.no_postgres else postgres_overhead(args.pg_ops)
                load = os.getloadavg()[0]  # a one-minute average: read once the load has run a while
            print(f"\nthe same beside {args.load} busy processes (load average {load:.2f} at the end):")
            _report_overhead(figures, pg, args.ops, args.pg_ops)
            print()
        resumed = resume_bench(Path(tmp), args.tasks, args.ops_per_task)
        print(f"resume after SIGKILL: {args.tasks} tasks x {args.ops_per_task} journaled ops")
        print(
            f"  all back to running in      {resumed['seconds']:9.2f} s"
            f"   (target < 5 s: {'met' if resumed['seconds'] < 5 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()

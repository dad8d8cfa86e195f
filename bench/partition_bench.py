"""PostgreSQL's partitioned history: the hot path beside archived days, and retention by dropping.

1. The hot path: journaled calls (a side-effect tool through ``ctx.call_tool``,
   an intent and a result each committed, as bench/durable_bench.py's) per
   second on a store holding ``--days`` archived days (a partition of the
   journal and one of the events each, with ``--tasks-a-day`` ended tasks in
   them), beside the same on a store with no archived partition, rounds
   alternating between the two. Target: the ratio about 1.0 (the planner
   prunes every statement of a run to the live partition). A read of a
   task's whole journal (``list_ops``, once a run: what a replay reads) is
   printed beside, with no target: it too reads the live partition alone
   (and ``archived_tasks``, to know the task is not archived).
2. Retention of ``--rows`` old journal rows (1,000,000 unless told; 100 calls
   and one event for each of rows/100 tasks that ended 40 days ago): the
   archived day dropped by ``completed=30d`` (`PartitionedHistory.drop_expired`:
   the partitions, and every other row of their tasks, in one transaction),
   beside the baseline: the same rows in another database, not archived,
   deleted with DELETE (one statement a table, the tasks' rows in one
   transaction, the fastest a row delete gets; a retention without
   partitions deletes a task at a time). Target: the drop under 1 s. The
   archiving that moved the rows (off the hot path, a worker's retention
   pass) is timed too, with no target.

Both on a throwaway cluster whose commits wait for the disk (the tests'
``DURABLE_SETTINGS``).

Run: ``python bench/partition_bench.py [--calls N] [--rounds N] [--days N] [--tasks-a-day N] [--rows N]``
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import psycopg

from ratchet.engine.retention import Retention
from ratchet.records import TaskStatus, utcnow
from ratchet.store import open_store

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
sys.path.insert(0, str(Path(__file__).parent))
from tests.helpers.pg import DURABLE_SETTINGS, Cluster, throwaway_cluster  # noqa: E402

from durable_bench import through_context  # noqa: E402

NOW = utcnow()
OPS_A_TASK = 100


# --------------------------------------------------------------------------- rows made in bulk

TASKS_SQL = """
INSERT INTO tasks (id, status, created_at, updated_at, record, name, agent)
SELECT %(prefix)s || n, 'completed', %(ended)s - 3600000000 + n, %(ended)s + n, '{}', 'old task', 'default'
FROM generate_series(1, %(tasks)s) AS n
"""
OPS_SQL = """
INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status, input, output,
                        started_at, finished_at, meta)
SELECT %(prefix)s || n, s, 'tool', 'noop', 1, %(prefix)s || n || ':' || s, 'succeeded',
       '{"request": "noop", "target": "service-a", "note": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}',
       '{"ok": true}', %(ended)s, %(ended)s, '{}'
FROM generate_series(1, %(tasks)s) AS n, generate_series(0, %(ops)s - 1) AS s
"""
EVENTS_SQL = """
INSERT INTO events (task_id, seq, time, kind, severity, message, data)
SELECT %(prefix)s || n, 1, %(ended)s, 'task', 'info', 'done', '{}' FROM generate_series(1, %(tasks)s) AS n
"""


def _micros(when: dt.datetime) -> int:
    return int(when.timestamp() * 1_000_000)


def fill(url: str, prefix: str, tasks: int, ops: int, ended: dt.datetime) -> None:
    """`tasks` completed tasks that ended at `ended`, each with `ops` journal rows and one event (live)."""
    params = {"prefix": prefix, "tasks": tasks, "ops": ops, "ended": _micros(ended)}
    with psycopg.connect(url, autocommit=True) as conn:
        for query in (TASKS_SQL, OPS_SQL, EVENTS_SQL):
            conn.execute(query, params)
        conn.execute("ANALYZE")


async def opened(url: str) -> None:
    """Open the store once: its schema made, at the latest version."""
    async with await open_store(url):
        pass


async def archive(url: str) -> float:
    """Archive every completed task; the seconds it took."""
    async with await open_store(url) as store:
        assert store.history is not None
        began = time.perf_counter()
        await store.history.archive([TaskStatus.COMPLETED], now=NOW)
        return time.perf_counter() - began


# --------------------------------------------------------------------------- 1. the hot path


async def first_read(url: str, count: int) -> float:
    """Seconds per read of a task's whole journal (a new task each, as a run's replay reads it)."""
    async with await open_store(url) as store:
        await store.list_ops("warm-up")
        began = time.perf_counter()
        for n in range(count):
            await store.list_ops(f"no-such-task-{n}")
        return (time.perf_counter() - began) / count


def hot_path(cluster: Cluster, args: argparse.Namespace) -> None:
    with cluster.database() as plain, cluster.database() as archived:
        for url in (plain, archived):
            asyncio.run(opened(url))
        for day in range(args.days):
            fill(archived, f"d{day}-", args.tasks_a_day, 5, NOW - dt.timedelta(days=day + 1))
        asyncio.run(archive(archived))
        for url in (plain, archived):
            vacuum(url)
        with psycopg.connect(archived) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM pg_inherits WHERE inhparent = 'operations'::regclass"
            ).fetchone()
        partitions = int(row[0]) if row else 0
        calls: dict[str, list[float]] = {"plain": [], "archived": []}
        reads: dict[str, list[float]] = {"plain": [], "archived": []}
        print(
            f"1. the hot path: {args.calls} journaled calls x {args.rounds} rounds; "
            f"{args.days} archived days ({partitions - 1} partitions of the journal, as many of the events)"
        )
        order = [("plain", plain), ("archived", archived)]
        for round_ in range(args.rounds):
            for name, url in order if round_ % 2 == 0 else order[::-1]:  # ABBA: neither always first
                calls[name].append(asyncio.run(through_context(url, args.calls)))
                reads[name].append(asyncio.run(first_read(url, 200)))
            shown = ", ".join(f"{name} {1 / calls[name][-1]:.0f}" for name, _ in order)
            print(f"  round {round_ + 1}: calls/s {shown}", flush=True)
    per_call = {name: statistics.median(times) for name, times in calls.items()}
    per_read = {name: statistics.median(times) for name, times in reads.items()}
    ratio = per_call["archived"] / per_call["plain"]
    for name in ("plain", "archived"):
        print(
            f"  {name:<9} {1 / per_call[name]:9.0f} calls/s  ({per_call[name] * 1e6:7.1f} us a call)   "
            f"a task's journal read: {per_read[name] * 1e6:7.1f} us"
        )
    verdict = "met" if 0.9 <= ratio <= 1.1 else "NOT met"
    print(f"  archived / plain, per call {ratio:9.2f}x   (target about 1.0, within 10 %: {verdict})")
    print(f"  archived / plain, per read {per_read['archived'] / per_read['plain']:9.2f}x   (no target)")


# --------------------------------------------------------------------------- 2. retention


async def drop(url: str) -> tuple[float, int]:
    async with await open_store(url) as store:
        assert store.history is not None
        cutoffs = {rule.status: rule.cutoff(NOW) for rule in Retention.parse(["completed=30d"]).rules}
        began = time.perf_counter()
        dropped = await store.history.drop_expired(cutoffs)
        return time.perf_counter() - began, dropped[TaskStatus.COMPLETED]


def vacuum(url: str) -> None:
    """What autovacuum does in the days between a task's archiving and its day's drop: the live
    partition rid of the rows archiving moved out of it (the drop looks there for events added late)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def delete_rows(url: str, tasks: int) -> float:
    """The baseline: the same tasks' rows deleted with DELETE, in one transaction."""
    with psycopg.connect(url) as conn:
        ids = [task_id for (task_id,) in conn.execute("SELECT id FROM tasks")]
        assert len(ids) == tasks
        began = time.perf_counter()
        for table in ("operations", "events"):
            conn.execute(f"DELETE FROM {table} WHERE task_id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM tasks WHERE id = ANY(%s)", (ids,))
        conn.commit()
        return time.perf_counter() - began


def retention(cluster: Cluster, args: argparse.Namespace) -> None:
    tasks = args.rows // OPS_A_TASK
    ended = NOW - dt.timedelta(days=40)
    with cluster.database() as partitioned, cluster.database() as rows:
        for url in (partitioned, rows):
            asyncio.run(opened(url))
            fill(url, "old-", tasks, OPS_A_TASK, ended)
        archived = asyncio.run(archive(partitioned))
        for url in (partitioned, rows):
            vacuum(url)
        seconds, dropped = asyncio.run(drop(partitioned))
        deleted = delete_rows(rows, tasks)
        with psycopg.connect(partitioned) as conn:
            left = conn.execute(
                "SELECT (SELECT COUNT(*) FROM operations) + (SELECT COUNT(*) FROM tasks)"
            ).fetchone()
    assert dropped == tasks and left is not None and left[0] == 0, (dropped, left)
    print(
        f"2. retention of {tasks * OPS_A_TASK:,} journal rows "
        f"({tasks:,} tasks, {OPS_A_TASK} calls and an event each)"
    )
    print(f"  archiving them (off the hot path) {archived:9.2f} s")
    print(
        f"  drop of their day                 {seconds:9.3f} s   "
        f"(target < 1 s: {'met' if seconds < 1 else 'NOT met'})"
    )
    print(f"  DELETE of the same rows           {deleted:9.3f} s   (the baseline)")
    print(f"  drop / DELETE                     {seconds / deleted:9.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="journaled calls a round (default 1000)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--days", type=int, default=90, help="archived days beside the hot path (default 90)")
    parser.add_argument("--tasks-a-day", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1_000_000, help="old journal rows retention drops")
    parser.add_argument("--skip", choices=["hot", "retention"], action="append", default=[])
    args = parser.parse_args()
    for name in ("calls", "rounds", "days", "tasks_a_day", "rows"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} takes a number above 0, not {getattr(args, name)}")
    with throwaway_cluster(settings=DURABLE_SETTINGS) as cluster:
        with cluster.admin() as conn:
            row = conn.execute("SHOW server_version").fetchone()
        print(
            f"python {platform.python_version()}, PostgreSQL {row[0] if row else '?'} (fsync on), "
            f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        if "hot" not in args.skip:
            hot_path(cluster, args)
        if "retention" not in args.skip:
            retention(cluster, args)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

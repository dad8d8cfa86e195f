"""How fast `ratchet tasks` lists a store of 100,000 tasks, on SQLite and on PostgreSQL.

Fills a fresh store with N tasks (default 100,000) by bulk insert (the rows
`create_task` writes, built from one record: realistic records of ~1.5 kB,
20 names, 5 agents, every status, created over 30 days), then measures:

1. ``ratchet tasks --limit 5 --desc`` as a new process each time (cold: the
   interpreter, imports, opening the store, the query), and the same with
   filters (``--name``, ``--agent``, ``--status`` twice, ``--since 2d``), and
   ``ratchet tasks | head -3`` through a shell pipe;
2. the store operations those make (``list_task_rows`` of 5 newest plus
   ``count_task_rows``), in-process, on an open store;
3. ``python -c "import ratchet.cli.application, ratchet.cli.tasks"`` (what
   `ratchet tasks` imports before it opens the store): the part of (1) no
   query can save;
4. ``ratchet tasks --limit 0 --json`` (every whole record, once per store):
   its time, when its first output came, and the most memory it held, beside
   ``ratchet tasks --limit 5 --json`` as the baseline of the same run.

Each figure is the median of R runs (default 5 for processes, 20 in-process).
PostgreSQL is a throwaway cluster (``tests/helpers/pg.py``, as bench/scale_bench.py).

Run: ``python bench/task_list_bench.py [--tasks N] [--repeats R] [--only sqlite|postgresql] [--json-only]``
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from ratchet.records import TaskFilter, TaskOrder, TaskStatus, WaitReason
from ratchet.store import open_store
from ratchet.store.sql import rows

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster and record builder
from tests.helpers.builders import make_task  # noqa: E402 (after the path above)
from tests.helpers.pg import throwaway_cluster  # noqa: E402

NAMES = [f"job-{i:02d}" for i in range(20)]
AGENTS = [f"agent-{i}" for i in range(5)]
STATUSES = (
    [TaskStatus.COMPLETED] * 6
    + [TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.QUEUED]
    + [TaskStatus.WAITING]
)
START = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
SPAN = dt.timedelta(days=30)
COLUMNS = "id, status, waiting_on, created_at, record, priority, parent_id, name, agent, updated_at"


def _rows(count: int) -> list[tuple[object, ...]]:
    """The task rows `create_task` would write, built from one record with its fields swapped in."""
    template = json.loads(make_task("x", instruction="Summarise the overnight alerts. " * 20).to_json())
    step = SPAN / count
    built = []
    for i in range(count):
        status = STATUSES[i % len(STATUSES)]
        waits = WaitReason.APPROVAL if status is TaskStatus.WAITING else None
        at = START + step * i
        record = {
            **template,
            "id": f"task-{i:06d}",
            "name": NAMES[i % len(NAMES)],
            "agent": AGENTS[i % len(AGENTS)],
            "status": str(status),
            "waiting_on": None if waits is None else str(waits),
            "created_at": at.isoformat(),
            "updated_at": at.isoformat(),
        }
        micros = rows.to_micros(at)
        built.append(
            (
                record["id"],
                str(status),
                record["waiting_on"],
                micros,
                json.dumps(record, separators=(",", ":")),
                5,
                None,
                record["name"],
                record["agent"],
                micros,
            )
        )
    return built


async def _make_schema(url: str) -> None:
    async with await open_store(url):
        pass


def fill_sqlite(path: Path, count: int) -> str:
    url = f"sqlite:///{path}"
    asyncio.run(_make_schema(url))
    with sqlite3.connect(path) as conn:
        conn.executemany(f"INSERT INTO tasks ({COLUMNS}) VALUES ({', '.join('?' * 10)})", _rows(count))
        conn.execute("ANALYZE")
    return url


def fill_postgresql(url: str, count: int) -> str:
    asyncio.run(_make_schema(url))
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor().copy(f"COPY tasks ({COLUMNS}) FROM STDIN") as copy:
            for row in _rows(count):
                copy.write_row(row)
        conn.execute("VACUUM ANALYZE tasks")
    return url


def _median_seconds(run: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _ratchet(url: str, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ratchet", "tasks", "--store", url, *args], capture_output=True, text=True
    )
    assert done.returncode == 0 and "task-" in done.stdout, done.stderr


def _piped(url: str) -> None:
    command = f"{sys.executable} -m ratchet tasks --store '{url}' | head -3"
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
    assert "task-" in done.stdout or "id" in done.stdout, done.stderr


async def _store_op(url: str, repeats: int, where: TaskFilter) -> float:
    async with await open_store(url) as store:
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            async with store.reading() as tx:
                found = await tx.list_task_rows(where, order=TaskOrder(descending=True), limit=5)
                await tx.count_task_rows(where)
            times.append(time.perf_counter() - began)
            assert found
    return statistics.median(times)


FILTERED = (
    "--name",
    "job-07",
    "--agent",
    "agent-2",
    "--status",
    "cancelled",
    "--status",
    "failed",
    "--since",
    "40d",
)


# Runs a command with its output in a pipe it reads and throws away; prints as JSON its time,
# when its first output came, how much it printed, and the most memory it held (kB). The command
# is this small process's child: one of the bench's own, which holds the rows it inserted,
# would count that memory as its peak.
_WATCH = """
import json, os, subprocess, sys, time
began = time.perf_counter()
process = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
first, size, last = None, 0, b""
while chunk := process.stdout.read1(1 << 16):
    first = first if first is not None else time.perf_counter() - began
    size, last = size + len(chunk), (last + chunk)[-2:]
_, status, usage = os.wait4(process.pid, 0)
seconds = time.perf_counter() - began
assert os.waitstatus_to_exitcode(status) == 0 and last == b"]\\n", (status, last)
print(json.dumps({"seconds": seconds, "first": first, "bytes": size, "peak_kb": usage.ru_maxrss}))
"""


def _watched(url: str, *args: str) -> dict[str, float]:
    command = [sys.executable, "-m", "ratchet", "tasks", "--store", url, *args]
    done = subprocess.run([sys.executable, "-c", _WATCH, *command], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def measure_json(kind: str, url: str, repeats: int) -> dict[str, dict[str, float]]:
    """Every whole record as JSON (once), beside 5 of them (the median of `repeats`) in the same run."""
    runs = sorted(
        (_watched(url, "--limit", "5", "--json") for _ in range(repeats)), key=lambda f: f["seconds"]
    )
    figures = {
        "ratchet tasks --limit 5 --json (baseline)": runs[len(runs) // 2],
        "ratchet tasks --limit 0 --json": _watched(url, "--limit", "0", "--json"),
    }
    print(f"\n{kind}, whole records as JSON:")
    for label, f in figures.items():
        print(
            f"  {label:<45} {f['seconds']:8.2f} s, first output after {f['first']:.2f} s, "
            f"{f['bytes'] / 1e6:.1f} MB printed, peak {f['peak_kb'] / 1024:.0f} MB"
        )
    return figures


def measure(kind: str, url: str, repeats: int) -> dict[str, float]:
    figures = {
        "ratchet tasks --limit 5 --desc": _median_seconds(
            lambda: _ratchet(url, "--limit", "5", "--desc"), repeats
        ),
        "ratchet tasks (filtered) --limit 5 --desc": _median_seconds(
            lambda: _ratchet(url, *FILTERED, "--limit", "5", "--desc"), repeats
        ),
        "ratchet tasks | head -3": _median_seconds(lambda: _piped(url), repeats),
        "store op: 5 newest + count": asyncio.run(_store_op(url, repeats * 4, TaskFilter())),
        "store op: filtered, 5 newest + count": asyncio.run(
            _store_op(
                url,
                repeats * 4,
                TaskFilter(
                    name="job-07",
                    agent="agent-2",
                    statuses=frozenset({TaskStatus.CANCELLED, TaskStatus.FAILED}),
                ),
            )
        ),
    }
    print(f"\n{kind}:")
    for label, seconds in figures.items():
        print(f"  {label:<45} {seconds * 1000:8.1f} ms")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument("--json-only", action="store_true", help="Only the JSON listings (4 above).")
    args = parser.parse_args()
    modules = "ratchet.cli.application, ratchet.cli.tasks"
    importing = [sys.executable, "-c", f"import {modules}"]
    startup = _median_seconds(lambda: subprocess.run(importing, check=True), args.repeats)
    print(f"{args.tasks:,} tasks; python -c 'import {modules}': {startup * 1000:.1f} ms")
    with tempfile.TemporaryDirectory() as workdir:
        if args.only != "postgresql":
            began = time.perf_counter()
            url = fill_sqlite(Path(workdir) / "tasks.db", args.tasks)
            print(f"SQLite filled in {time.perf_counter() - began:.1f} s")
            if not args.json_only:
                measure("SQLite", url, args.repeats)
            measure_json("SQLite", url, args.repeats)
        if args.only != "sqlite":
            with throwaway_cluster() as cluster:
                began = time.perf_counter()
                url = fill_postgresql(cluster.create_database(), args.tasks)
                print(f"PostgreSQL filled in {time.perf_counter() - began:.1f} s")
                if not args.json_only:
                    measure("PostgreSQL", url, args.repeats)
                measure_json("PostgreSQL", url, args.repeats)


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "160")
    main()

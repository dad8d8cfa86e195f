"""Group commit: side-effect calls per second of many tasks on one worker, commits shared or not.

N tasks (default 32) run at once in one process, each making K calls of a
no-op tool with side effects (``risk="write_local"``: an intent and a result
are committed per call, each in a fenced transaction). The figure is calls per
second: N x K over the time from the first task's first call to the last
task's last call. It is measured with ``group_commit=off`` (one commit per
write: the baseline) and ``group_commit=on`` in the same run, alternately, on
a fresh database each time, and the medians are compared.
Targets (issue 34): on >= 5x off on SQLite with ``durability=full``, on >= 3x
off on PostgreSQL.
SQLite with ``durability=normal`` (no sync per commit) is shown beside it.

PostgreSQL is a throwaway cluster started here (tests/helpers/pg.py's), by
default with ``fsync``, ``synchronous_commit`` and ``full_page_writes`` on,
so that a commit waits for the disk as in production (what group commit is
for); ``--pg-fsync off`` keeps the tests' settings instead. A lone task (N=1)
is measured the same way, to show what grouping costs when there is no one
to group with.

Run: ``python bench/group_commit_bench.py [--tasks N] [--calls K] [--repeats R] [--stores sqlite,postgres]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

import ratchet

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
from tests.helpers.pg import DURABLE_SETTINGS, SETTINGS, Cluster, throwaway_cluster  # noqa: E402

PAYLOAD = {"request": "noop", "target": "service-a", "note": "x" * 40}
TARGETS = {"sqlite": 5.0, "postgresql": 3.0}


@ratchet.tool(risk="write_local")
async def noop(request: str, target: str, note: str) -> dict:
    """Do nothing, with side effects as far as the journal knows."""
    return {"ok": True}


@ratchet.workflow(tools=[noop])
async def calls(ctx: ratchet.Context, count: int) -> list[float]:
    began = time.perf_counter()
    for _ in range(count):
        await ctx.call_tool("noop", PAYLOAD)
    return [began, time.perf_counter()]


async def calls_per_second(url: str, tasks: int, count: int) -> tuple[float, float]:
    """Run `tasks` tasks of `count` calls at once; return calls/s and the mean members per commit."""
    async with ratchet.Runtime(url) as runtime:
        done = await asyncio.gather(*(runtime.run(calls, {"count": count}) for _ in range(tasks)))
        groups = runtime.store.groups
        per_commit = groups.members / groups.commits if groups is not None and groups.commits else 1.0
    for task in done:
        assert task.status == "completed", task.error
    first = min(task.result[0] for task in done)
    last = max(task.result[1] for task in done)
    return tasks * count / (last - first), per_commit


@contextmanager
def sqlite_urls(workdir: Path, durability: str) -> Iterator[Callable[[], str]]:
    numbers = iter(range(1_000_000))

    def fresh() -> str:
        return f"sqlite:///{workdir / f'g{next(numbers)}.db'}?durability={durability}"

    yield fresh


@contextmanager
def postgres_urls(cluster: Cluster) -> Iterator[Callable[[], str]]:
    made: list[str] = []

    def fresh() -> str:
        made.append(cluster.create_database())
        return made[-1]

    try:
        yield fresh
    finally:
        for url in made:
            cluster.drop_database(url)


def measure(fresh: Callable[[], str], tasks: int, count: int, repeats: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"off": [], "on": [], "group": []}
    for repeat in range(repeats):
        for mode in ("off", "on") if repeat % 2 == 0 else ("on", "off"):
            url = fresh()
            url += ("&" if "?" in url else "?") + f"group_commit={mode}"
            rate, per_commit = asyncio.run(calls_per_second(url, tasks, count))
            figures[mode].append(rate)
            if mode == "on":
                figures["group"].append(per_commit)
    return figures


def report(name: str, fresh: Callable[[], str], args: argparse.Namespace, *, target: float | None) -> None:
    for tasks, count in ((args.tasks, args.calls), (1, args.calls * 4)):
        figures = measure(fresh, tasks, count, args.repeats)
        off, on = statistics.median(figures["off"]), statistics.median(figures["on"])
        ratio = on / off
        verdict = ""
        if tasks > 1 and target is not None:
            verdict = f"target >= {target:g}x: {'met' if ratio >= target else 'NOT met'}"
        print(
            f"  {name:<28} {tasks:>3} task(s) x {count:<4} off {off:8.0f} calls/s   on {on:8.0f} calls/s"
            f"   on/off {ratio:5.2f}x   {statistics.median(figures['group']):4.1f} writes per commit"
            f"   {verdict}"
        )
        runs = ", ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(figures["off"], figures["on"], strict=True))
        print(f"  {'':<28} runs (off/on calls/s): {runs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--calls", type=int, default=100, help="side-effect calls per task")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg-fsync", choices=("on", "off"), default="on")
    args = parser.parse_args()
    stores = args.stores.split(",")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"psycopg {psycopg.__version__}, {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.2f} at the start"
    )
    print(
        f"{args.tasks} tasks at once in one process, {args.calls} side-effect calls each (2 commits a call)"
    )
    if "sqlite" in stores:
        for durability in ("full", "normal"):
            with tempfile.TemporaryDirectory() as workdir, sqlite_urls(Path(workdir), durability) as fresh:
                target = TARGETS["sqlite"] if durability == "full" else None
                report(f"sqlite durability={durability}", fresh, args, target=target)
    if "postgres" in stores:
        with throwaway_cluster(settings=DURABLE_SETTINGS if args.pg_fsync == "on" else SETTINGS) as cluster:
            with cluster.admin() as conn:
                names = ("fsync", "synchronous_commit")
                shown = [f"{n}={conn.execute(f'SHOW {n}').fetchone()[0]}" for n in names]
                version = conn.execute("SHOW server_version").fetchone()[0]
            with postgres_urls(cluster) as fresh:
                name = f"postgresql {version.split()[0]} {' '.join(shown)}"
                report(name, fresh, args, target=TARGETS["postgresql"])
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

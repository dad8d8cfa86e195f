"""How long `Runtime.replay_check` takes over 1,000 stored tasks, on SQLite and on PostgreSQL.

Each task is a run of `handful`: a clock read, five tool calls (two
read-only, three with side effects, so intents too) and a state patch, all
journaled: seven operations. The tasks are run for real first (not timed);
the figure is the wall-clock time of one ``replay_check(ALL_TASKS)`` over all
of them (each completed, so each is held to its whole journal and its
result), against the target of 10 s, and the time per task.

PostgreSQL is a throwaway cluster of its own (tests/helpers/pg.py), with the
tests' settings.

Run: ``python bench/replay_check_bench.py [--tasks N] [--no-postgres]``
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from pathlib import Path

import ratchet
from ratchet import Context, Runtime
from ratchet.records import ALL_TASKS

TARGET_SECONDS = 10.0


@ratchet.tool(risk="read_only")
def look_up(item: str) -> int:
    """A price (read-only)."""
    return len(item)


@ratchet.tool(risk="write_local")
def book(item: str, amount: int) -> str:
    """A booking (a side effect: its intent is journaled first)."""
    return f"booked {item} for {amount}"


@ratchet.workflow(tools=[look_up, book])
async def handful(ctx: Context, order: str) -> dict[str, object]:
    """Seven journaled operations."""
    when = await ctx.now()
    first = await ctx.call_tool("look_up", {"item": order})
    second = await ctx.call_tool("look_up", {"item": order + "-extra"})
    booked = [await ctx.call_tool("book", {"item": f"{order}-{n}", "amount": first + n}) for n in range(3)]
    await ctx.apply_patch({"ops": [{"op": "set_risk_flag", "flag": f"booked-{len(booked)}"}]})
    return {"at": when.isoformat(), "total": first + second, "booked": booked}


async def _record(url: str, tasks: int) -> None:
    async with Runtime(url) as rt:
        for n in range(tasks):
            task = await rt.run(handful, {"order": f"order-{n}"})
            assert task.status == "completed", task.error


async def _check(url: str, tasks: int) -> float:
    async with Runtime(url) as rt:
        began = time.perf_counter()
        outcomes = await rt.replay_check(ALL_TASKS)
        elapsed = time.perf_counter() - began
    assert len(outcomes) == tasks, len(outcomes)
    assert all(outcome.ok and outcome.replayed == 7 for outcome in outcomes), outcomes[:3]
    return elapsed


def _report(label: str, seconds: float, tasks: int) -> None:
    ratio = seconds / TARGET_SECONDS
    verdict = "met" if seconds < TARGET_SECONDS else "NOT met"
    print(
        f"  {label:<16} {tasks} tasks checked in {seconds:6.2f} s  ({seconds / tasks * 1e3:5.2f} ms a task); "
        f"{ratio:.2f}x the target of {TARGET_SECONDS:g} s: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    print(f"replay_check over {args.tasks} stored tasks of 7 operations (Python {platform.python_version()})")
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'bench.db'}"
        asyncio.run(_record(url, args.tasks))
        _report("SQLite", asyncio.run(_check(url, args.tasks)), args.tasks)
    if args.no_postgres:
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for the tests' throwaway cluster
    from tests.helpers.pg import throwaway_cluster

    with throwaway_cluster() as cluster:
        with cluster.admin() as conn:
            row = conn.execute("SHOW server_version").fetchone()
        with cluster.database() as url:
            asyncio.run(_record(url, args.tasks))
            version = str(row[0]).split()[0] if row else "?"
            _report(f"PostgreSQL {version}", asyncio.run(_check(url, args.tasks)), args.tasks)


if __name__ == "__main__":
    main()

"""How fast the `ratchet` program starts: `--version`, `--help` and `ratchet tasks --limit 20`.

Each command runs as a new process, as a person runs it: the interpreter
starts, imports what the command needs, and the command runs. The figures are
the median (and the fastest) of R runs each (default 15), taken in rounds that
run every command once, so a load that comes and goes weighs on all of them
alike. Before the first round, Ratchet's modules are compiled to bytecode and
each command runs once unmeasured.

``python -c pass`` is measured in the same rounds: the interpreter's own start,
which no change to Ratchet can lower. `ratchet tasks` lists a SQLite store of
N tasks (default 300) made for the bench, every status, output to a pipe at
100 columns.

The targets (docs/benchmarks.md): `ratchet --version` under 0.2 s and
`ratchet tasks --limit 20` under 0.4 s on the project's 2-core machine.

Run: ``python bench/cli_start.py [--repeats R] [--tasks N]``
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ratchet
from ratchet.records import Task, TaskStatus, WaitReason
from ratchet.store import open_store

STATUSES = [TaskStatus.COMPLETED] * 5 + [
    TaskStatus.FAILED,
    TaskStatus.CANCELLED,
    TaskStatus.QUEUED,
    TaskStatus.RUNNING,
    TaskStatus.WAITING,
]
START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)

# Each command with its target, in seconds (None: none set).
TARGETS = {"--version": 0.2, "--help": 0.2, "tasks --limit 20": 0.4}


def _ratchet() -> list[str]:
    """The console script installed beside this interpreter, as a person runs it (else ``-m ratchet``)."""
    script = Path(sys.executable).with_name("ratchet")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ratchet"]


async def _fill(url: str, count: int) -> None:
    store = await open_store(url)
    try:
        for i in range(count):
            status = STATUSES[i % len(STATUSES)]
            at = START + dt.timedelta(minutes=7 * i)
            await store.create_task(
                Task(
                    id=f"task-{i:04d}",
                    name=f"nightly report {i % 12}",
                    instruction="Summarise the overnight alerts and file what needs a person.",
                    agent=f"ops-agent-{i % 3}",
                    status=status,
                    waiting_on=WaitReason.APPROVAL if status is TaskStatus.WAITING else None,
                    created_at=at,
                    updated_at=at + dt.timedelta(seconds=40),
                )
            )
    finally:
        await store.close()


def _time(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--tasks", type=int, default=300, help="tasks in the listed store (default 300)")
    options = parser.parse_args()

    compileall.compile_dir(str(Path(ratchet.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        asyncio.run(_fill(url, options.tasks))
        env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "RATCHET_STORE": url}
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "--version": [*_ratchet(), "--version"],
            "--help": [*_ratchet(), "--help"],
            "tasks --limit 20": [*_ratchet(), "tasks", "--limit", "20"],
        }
        for command in commands.values():  # warm: the disk's cache, the bytecode
            _time(command, env)
        times: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(options.repeats):
            for label, command in commands.items():
                times[label].append(_time(command, env))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"ratchet program start, {options.repeats} runs each, {options.tasks} tasks, load average {load:.1f}"
    )
    print(f"{'command':<28}{'median':>10}{'fastest':>10}{'target':>10}")
    for label, measured in times.items():
        target = TARGETS.get(label)
        name = label if label.startswith("python") else f"ratchet {label}"
        shown = "" if target is None else f"{target * 1000:.0f} ms"
        median, fastest = statistics.median(measured) * 1000, min(measured) * 1000
        print(f"{name:<28}{median:>7.0f} ms{fastest:>7.0f} ms{shown:>10}")


if __name__ == "__main__":
    main()

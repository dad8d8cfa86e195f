"""What the SQLite store's journal and events cost, next to raw sqlite3.

Measures, on a database in a temporary directory:

- a journal pair: ``record_op_started`` then ``record_op_finished`` of the same
  no-op tool operation (about 100 bytes of JSON input and output), through the
  store: two commits, as a tool with side effects costs (journal before effect);
- one ``append_event`` through the store (one commit);
- raw sqlite3: ``BEGIN IMMEDIATE; INSERT; COMMIT`` of a row of the same size
  into a table shaped like the journal, with the store's pragmas (WAL,
  synchronous, busy_timeout).

The three run interleaved in each repetition, after a warm-up; each figure is
the median over the repetitions. Target: a journal pair costs at most twice a
raw insert.

Run: ``python bench/store_bench.py [--iterations N] [--repeats R] [--durability normal|full]``
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ratchet.records import Event, Operation, OpKind, OpStatus, Task
from ratchet.store import StateStore, open_store

TASK_ID = "bench-task"
PAYLOAD = {
    "request": "noop",
    "target": "service-a",
    "attempt": 1,
    "tags": ["bench", "journal"],
    "note": "x" * 24,
}
EVENT_MESSAGE = "tool noop finished in 0 ms; " + "x" * 72
TARGET_RATIO = 2.0

RAW_TABLE = """
CREATE TABLE operations (
    task_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
    attempt INTEGER NOT NULL, idempotency_key TEXT NOT NULL, status TEXT NOT NULL,
    input TEXT, output TEXT, error TEXT, started_at INTEGER NOT NULL, finished_at INTEGER,
    PRIMARY KEY (task_id, seq)
)"""
RAW_INSERT = "INSERT INTO operations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class Journal:
    """Feeds the store one no-op tool operation after another (records built ahead of timing)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.next_seq = 0

    def build(self, count: int) -> list[tuple[Operation, Operation]]:
        pairs = []
        for seq in range(self.next_seq, self.next_seq + count):
            started = Operation(
                task_id=TASK_ID,
                seq=seq,
                kind=OpKind.TOOL,
                name="noop",
                idempotency_key=f"{TASK_ID}:{seq}",
                input=PAYLOAD,
            )
            finished = started.model_copy(
                update={
                    "status": OpStatus.SUCCEEDED,
                    "output": PAYLOAD,
                    "finished_at": started.started_at + dt.timedelta(microseconds=5),
                }
            )
            pairs.append((started, finished))
        self.next_seq += count
        return pairs

    async def run(self, count: int) -> float:
        pairs = self.build(count)
        began = time.perf_counter()
        for started, finished in pairs:
            await self.store.record_op_started(started)
            await self.store.record_op_finished(finished)
        return time.perf_counter() - began


async def append_events(store: StateStore, count: int) -> float:
    events = [Event(task_id=TASK_ID, kind="tool", message=EVENT_MESSAGE) for _ in range(count)]
    began = time.perf_counter()
    for event in events:
        await store.append_event(event)
    return time.perf_counter() - began


class RawInserts:
    """The baseline: one row per transaction straight through sqlite3."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute("PRAGMA busy_timeout=5000")
        self.conn.execute(RAW_TABLE)
        self.next_seq = 0

    def run(self, count: int) -> float:
        payload = json.dumps(PAYLOAD, separators=(",", ":"))
        now = time.time_ns() // 1000
        rows = [
            (
                TASK_ID,
                seq,
                "tool",
                "noop",
                1,
                f"{TASK_ID}:{seq}",
                "succeeded",
                payload,
                payload,
                None,
                now,
                now + 5,
            )
            for seq in range(self.next_seq, self.next_seq + count)
        ]
        self.next_seq += count
        execute = self.conn.execute
        began = time.perf_counter()
        for row in rows:
            execute("BEGIN IMMEDIATE")
            execute(RAW_INSERT, row)
            execute("COMMIT")
        return time.perf_counter() - began


async def measure(args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    store = await open_store(f"sqlite:///{workdir / 'store.db'}?durability={args.durability}")
    raw = RawInserts(workdir / "raw.db", "FULL" if args.durability == "full" else "NORMAL")
    try:
        await store.create_task(Task(id=TASK_ID, name="bench", instruction="measure the store"))
        journal = Journal(store)
        cases: dict[str, Callable[[int], Awaitable[float] | float]] = {
            "journal pair": journal.run,
            "append_event": lambda n: append_events(store, n),
            "raw insert+commit": raw.run,
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for repetition in range(args.repeats + 1):  # repetition 0 is the warm-up
            count = args.warmup if repetition == 0 else args.iterations
            for name, case in cases.items():
                outcome = case(count)
                seconds = await outcome if asyncio.iscoroutine(outcome) else outcome
                if repetition:
                    samples[name].append(seconds / count * 1e6)
        return {name: statistics.median(values) for name, values in samples.items()}
    finally:
        raw.conn.close()
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--durability", choices=("normal", "full"), default="normal")
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus"
    )
    print(
        f"durability={args.durability}, {args.iterations} iterations x {args.repeats} "
        f"repetitions (median), warm-up {args.warmup}"
    )
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as tmp:
        figures = asyncio.run(measure(args, Path(tmp)))

    raw = figures["raw insert+commit"]
    for name, micros in figures.items():
        print(f"  {name:<20} {micros:9.1f} us")
    pair_ratio = figures["journal pair"] / raw
    event_ratio = figures["append_event"] / raw
    print(f"  journal pair / raw   {pair_ratio:9.2f}x")
    print(f"  append_event / raw   {event_ratio:9.2f}x")
    verdict = "met" if pair_ratio <= TARGET_RATIO else "NOT met"
    print(f"target: journal pair <= {TARGET_RATIO:g}x raw: {verdict}")


if __name__ == "__main__":
    main()

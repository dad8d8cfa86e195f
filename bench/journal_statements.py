"""The SQLite journal's writes at the store: statements and CPU per write, beside a raw commit.

Through `StateStore.record_op_started` and `record_op_finished`, fenced by a
current lease as the engine writes them: a journal pair (a side-effect
call's intent, then its outcome) and a lone outcome (a read-only call's),
each timed over ``--count`` writes ``--repeats`` times after one warm-up
round, beside raw sqlite3 ``BEGIN IMMEDIATE; INSERT; COMMIT``
(bench/durable_bench.py's) in the same rounds. Prints the statements each
write ran (SQLite's trace callback: a count that no other process on the
machine can move) and the minimum and median per write, in CPU time
(``time.process_time``) and wall-clock time.

Run: ``python bench/journal_statements.py [--count N] [--repeats N]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ratchet.records import Operation, OpKind, OpStatus, Task, utcnow
from ratchet.store.sql.sqlite.store import SqliteDriver, SqliteStore

sys.path.insert(0, str(Path(__file__).parent))
from durable_bench import PAYLOAD, raw_insert_commit


def operation(task_id: str, seq: int, status: OpStatus) -> Operation:
    done = status is not OpStatus.STARTED
    return Operation(
        task_id=task_id,
        seq=seq,
        kind=OpKind.TOOL,
        name="noop",
        idempotency_key=f"{task_id}:{seq}",
        status=status,
        input=PAYLOAD,
        output={"ok": True} if done else None,
        started_at=utcnow(),
        finished_at=utcnow() if done else None,
    )


async def measure(workdir: Path, count: int, repeats: int) -> dict[str, list[tuple[float, float]]]:
    store = SqliteStore(workdir / "journal.db")
    await store.open()
    task = await store.create_task(Task(id="bench", name="bench", instruction="measure"))
    lease = await store.claim_lease(task.id, "bench", 600)
    assert lease is not None
    assert store._open is not None
    driver = store._open.driver
    assert isinstance(driver, SqliteDriver)
    statements: list[str] = []
    driver.conn.set_trace_callback(statements.append)
    await store.record_op_started(operation(task.id, 0, OpStatus.STARTED), fence=lease)
    await store.record_op_finished(operation(task.id, 0, OpStatus.SUCCEEDED), fence=lease)
    pair_statements = len(statements)
    statements.clear()
    await store.record_op_finished(operation(task.id, 1, OpStatus.SUCCEEDED), fence=lease)
    print(f"statements: journal pair {pair_statements}, lone outcome {len(statements)}")
    driver.conn.set_trace_callback(None)
    figures: dict[str, list[tuple[float, float]]] = {"pair": [], "lone": [], "raw": []}
    seq = 2
    for round_ in range(repeats + 1):
        starts = [operation(task.id, seq + i, OpStatus.STARTED) for i in range(count)]
        ends = [operation(task.id, seq + i, OpStatus.SUCCEEDED) for i in range(count)]
        lone = [operation(task.id, seq + count + i, OpStatus.SUCCEEDED) for i in range(count)]
        seq += 2 * count
        began, cpu = time.perf_counter(), time.process_time()
        for start, end in zip(starts, ends, strict=True):
            await store.record_op_started(start, fence=lease)
            await store.record_op_finished(end, fence=lease)
        pair = ((time.perf_counter() - began) / count, (time.process_time() - cpu) / count)
        began, cpu = time.perf_counter(), time.process_time()
        for end in lone:
            await store.record_op_finished(end, fence=lease)
        one = ((time.perf_counter() - began) / count, (time.process_time() - cpu) / count)
        raw = raw_insert_commit(workdir / f"raw{round_}.db", count)
        if round_:  # the first round warms up
            figures["pair"].append(pair)
            figures["lone"].append(one)
            figures["raw"].append(raw)
    await store.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ratchet-journal-statements-") as tmp:
        figures = asyncio.run(measure(Path(tmp), args.count, args.repeats))
    print(f"load average {os.getloadavg()[0]:.2f}; per write set, us, min / median of {args.repeats}:")
    for i, clock in ((1, "CPU"), (0, "wall")):
        cells = []
        for name in ("pair", "lone", "raw"):
            values = [figure[i] * 1e6 for figure in figures[name]]
            cells.append(f"{name} {min(values):6.1f} / {statistics.median(values):6.1f}")
        print(f"  {clock:<4}  " + "   ".join(cells))


if __name__ == "__main__":
    main()

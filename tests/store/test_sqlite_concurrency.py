"""Several OS processes writing one SQLite file at once lose nothing (SQLite only).

The processes run `sqlite_worker.py`; each opens the store, says it is ready,
and all start writing at the same moment.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ratchet.records import utcnow
from ratchet.store import StateStore

from ..helpers.builders import make_task, make_trigger

WORKER_SCRIPT = Path(__file__).with_name("sqlite_worker.py")
PROCESSES = 3
TIMEOUT = 120


@pytest.fixture
def store_kind() -> str:
    """The root conftest's `store` and `store_url`, narrowed to SQLite."""
    return "sqlite"


def _run_together(store_url: str, go_file: Path, args: Callable[[int], list[str]]) -> list[str]:
    """Run PROCESSES workers (worker i gets ``args(i)``), released at once; return their stdout."""
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER_SCRIPT), store_url, str(go_file), *args(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            if worker.stdout.readline().strip() != "ready":
                pytest.fail(f"worker did not start: {worker.communicate(timeout=TIMEOUT)[1]}")
        go_file.touch()
        outputs = [worker.communicate(timeout=TIMEOUT) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    for worker, (_, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
    return [stdout for stdout, _ in outputs]


async def test_processes_appending_at_once_lose_no_row(
    store: StateStore, store_url: str, tmp_path: Path
) -> None:
    count = 300
    await store.create_task(make_task("t1"))

    _run_together(store_url, tmp_path / "go", lambda i: ["append", "t1", str(i), str(count)])

    events = await store.list_events("t1")
    assert [e.seq for e in events] == list(range(1, PROCESSES * count + 1))
    written = sorted((e.data["w"], e.data["i"]) for e in events)
    assert written == [(w, i) for w in range(PROCESSES) for i in range(count)]
    ops = await store.list_ops("t1")
    assert [op.seq for op in ops] == list(range(PROCESSES * count))
    assert all(op.output == {"w": op.seq // count, "i": op.seq % count} for op in ops)


async def test_processes_claiming_at_once_never_share_a_trigger(
    store: StateStore, store_url: str, tmp_path: Path
) -> None:
    await store.create_task(make_task("t1"))
    hour_ago = utcnow() - dt.timedelta(hours=1)
    queued = [await store.put_trigger(make_trigger(hour_ago, kind=f"k{i}", task_id="t1")) for i in range(150)]

    outputs = _run_together(store_url, tmp_path / "go", lambda i: ["claim"])

    claims = [json.loads(stdout) for stdout in outputs]
    claimed = [trigger_id for ids in claims for trigger_id in ids]
    assert len(claimed) == len(set(claimed)), "a trigger was claimed twice"
    assert sorted(claimed) == sorted(t.id for t in queued)
    assert await store.list_triggers() == []


async def test_processes_claiming_one_lease_at_once_get_one_token(
    store: StateStore, store_url: str, tmp_path: Path
) -> None:
    await store.create_task(make_task("t1"))

    outputs = _run_together(store_url, tmp_path / "go", lambda i: ["lease", "t1", str(i)])

    tokens = [json.loads(stdout) for stdout in outputs]
    assert sorted(tokens, key=str) == [1] + [None] * (PROCESSES - 1)
    assert len(await store.lease_history("t1")) == 1


async def test_processes_updating_one_session_lose_no_change(
    store: StateStore, store_url: str, tmp_path: Path
) -> None:
    count = 40

    _run_together(store_url, tmp_path / "go", lambda i: ["session", "s1", str(i), str(count)])

    stored = await store.get_session("s1")
    assert stored.state == {f"w{w}-{i}": i for w in range(PROCESSES) for i in range(count)}
    assert stored.version == PROCESSES * count

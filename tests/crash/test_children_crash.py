"""Child tasks under SIGKILL: a parent's process killed while its children run, a child killed while
its parent waits, and a worker pool losing a worker in the middle of a tree.

Each child holds in `occupy` (idempotent: run again after a kill) before its one
recorded effect, so a kill lands while children run and the ledger tells whether
any effect happened twice. Every loop is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ratchet import Runtime, TaskStatus, WaitReason
from ratchet.engine.run.runner import run_task
from ratchet.records import OpKind
from ratchet.store import StateStore

from ..engine.child_flows import HERE
from ..engine.flows import entries
from .harness import KILLED, Stores, _spawn, _with_store

COUNT = 3


def _marks_in(path: Path) -> int:
    return path.read_text().count("+") if path.exists() else 0


def _wait_for_marks(path: Path, count: int, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    """Until `count` children have entered `occupy` (they hold there), or fail."""
    end = time.monotonic() + timeout
    while _marks_in(path) < count:
        if proc.poll() is not None:
            raise AssertionError(f"the process ended first ({proc.returncode}): {proc.communicate()}")
        assert time.monotonic() < end, f"only {_marks_in(path)} of {count} children started in {timeout:g} s"
        time.sleep(0.05)


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == KILLED


def _resume(url: str, task_id: str) -> subprocess.Popen[str]:
    return _spawn([sys.executable, "-m", "ratchet", "resume", task_id, "--store", url, "--lease-ttl", "2"])


def _submit(url: str, inputs: dict[str, Any]) -> str:
    async def submit(store: StateStore) -> str:
        return await Runtime(store).submit(f"{HERE}:fan_out", inputs, queue=False)

    return _with_store(url, submit)


def _check_tree(url: str, parent_id: str, ledger: str) -> None:
    """The parent completed with every child's result; each child was started once and did its effect once."""

    async def read(store: StateStore) -> None:
        parent = await store.get_task(parent_id)
        assert parent.status is TaskStatus.COMPLETED, parent.error
        assert parent.result == [f"child-{i}" for i in range(COUNT)]
        children = await store.list_children(parent_id)
        assert len(children) == COUNT
        assert all(child.status is TaskStatus.COMPLETED for child in children)
        starts = [
            op
            for op in await store.list_ops(parent_id)
            if op.kind is OpKind.CHILD and op.name == "start_child"
        ]
        assert sorted(str(op.output["child_id"]) for op in starts if isinstance(op.output, dict)) == sorted(
            c.id for c in children
        )
        started = [e for e in await store.list_events(parent_id) if e.kind == "child_started"]
        assert len(started) == COUNT

    _with_store(url, read)
    assert [len(entries(ledger, f"child-{i}")) for i in range(COUNT)] == [1] * COUNT


def test_a_parent_killed_while_its_children_run_resumes_and_each_child_starts_once(
    stores: Stores, tmp_path: Path
) -> None:
    url = stores.fresh(tmp_path / "store")
    marks, ledger = tmp_path / "marks", str(tmp_path / "ledger.jsonl")
    parent_id = _submit(
        url, {"ledger": ledger, "marks": str(marks), "count": COUNT, "limit": COUNT, "seconds": 2}
    )

    first = _resume(url, parent_id)
    _wait_for_marks(marks, COUNT, first)
    _kill(first)  # the parent waits on children that were running in the same process
    assert _with_store(url, lambda store: store.get_task(parent_id)).waiting_on is WaitReason.CHILDREN

    second = _resume(url, parent_id)
    out, err = second.communicate(timeout=60)

    assert second.returncode == 0, (out, err)
    _check_tree(url, parent_id, ledger)


def test_a_child_killed_while_its_parent_waits_finishes_and_wakes_the_parent(
    stores: Stores, tmp_path: Path
) -> None:
    url = stores.fresh(tmp_path / "store")
    marks, ledger = tmp_path / "marks", str(tmp_path / "ledger.jsonl")
    parent_id = _submit(
        url, {"ledger": ledger, "marks": str(marks), "count": COUNT, "limit": COUNT, "seconds": 2}
    )

    async def run_parent_alone(store: StateStore) -> WaitReason | None:
        return (await run_task(store, parent_id)).waiting_on  # starts the children, then waits

    assert _with_store(url, run_parent_alone) is WaitReason.CHILDREN
    child = _resume(url, f"{parent_id}.0")
    _wait_for_marks(marks, 1, child)
    _kill(child)

    parent = _resume(url, parent_id)
    out, err = parent.communicate(timeout=60)

    assert parent.returncode == 0, (out, err)
    _check_tree(url, parent_id, ledger)


def test_a_worker_pool_losing_a_worker_finishes_the_tree(stores: Stores, tmp_path: Path) -> None:
    url = stores.fresh(tmp_path / "store")
    marks, ledger = tmp_path / "marks", str(tmp_path / "ledger.jsonl")
    inputs: dict[str, JsonValue] = {
        "ledger": ledger,
        "marks": str(marks),
        "count": COUNT,
        "limit": 2,
        "seconds": 1.5,
    }

    async def submit(store: StateStore) -> str:
        return await Runtime(store).submit(f"{HERE}:fan_out", inputs)

    parent_id = _with_store(url, submit)
    command = [sys.executable, "-m", "ratchet", "worker", "--store", url, "--lease-ttl", "1", "--poll", "0.1"]
    doomed = _spawn(command)
    _wait_for_marks(marks, 2, doomed)
    _kill(doomed)
    survivors = [_spawn(command) for _ in range(2)]
    try:
        end = time.monotonic() + 60
        while _with_store(url, lambda store: store.get_task(parent_id)).status is not TaskStatus.COMPLETED:
            assert time.monotonic() < end, "the tree did not finish in 60 s"
            time.sleep(0.2)
    finally:
        for worker in survivors:
            worker.send_signal(signal.SIGTERM)
        for worker in survivors:
            worker.communicate(timeout=30)
    _check_tree(url, parent_id, ledger)

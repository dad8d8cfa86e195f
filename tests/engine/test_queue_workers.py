"""Queues across real worker processes: a queue's concurrency holds across every worker, per partition
when tasks have one, and a place held by a worker killed with SIGKILL comes back when its lease expires.

Each task makes one tool call that sleeps (`tests.engine.limited_flows`);
the journal's times of those calls say which tasks ran at once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ratchet.records import Limit, OpKind, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore, open_store

from .limited_flows import HERE

REPO = Path(__file__).resolve().parents[2]
LEASE_TTL = 2.0
WAIT_FOR_ALL = 90.0  # seconds the tasks may take, all told; they take a fraction of it


class Workers:
    """`ratchet worker` processes on one store, each logging to a file of its own."""

    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root
        self.running: list[subprocess.Popen[bytes]] = []

    def start(self, count: int = 1) -> list[subprocess.Popen[bytes]]:
        started = []
        for _ in range(count):
            n = len(self.running) + 1
            log = (self.root / f"w{n}.log").open("wb")
            command = [sys.executable, "-m", "ratchet", "worker", "--store", self.url, "--name", f"w{n}"]
            options = ["--lease-ttl", str(LEASE_TTL), "--concurrency", "4", "--poll", "0.1", "--grace", "1"]
            process = subprocess.Popen(
                [*command, *options],
                cwd=self.root,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            self.running.append(process)
            started.append(process)
        return started

    def stop(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.running:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in self.root.glob("w*.log")
        )


@pytest.fixture
def workers(url: str, tmp_path: Path) -> Iterator[Workers]:
    crew = Workers(url, tmp_path)
    try:
        yield crew
    finally:
        crew.stop()


async def _all_done(store: StateStore, task_ids: list[str], workers: Workers) -> None:
    deadline = time.monotonic() + WAIT_FOR_ALL
    while True:
        tasks = [await store.get_task(task_id) for task_id in task_ids]
        if all(task.status is TaskStatus.COMPLETED for task in tasks):
            return
        failed = [
            task for task in tasks if task.status.is_terminal and task.status is not TaskStatus.COMPLETED
        ]
        assert not failed, f"{failed[0].id}: {failed[0].status_text} {failed[0].error}\n{workers.logs()}"
        assert time.monotonic() < deadline, "tasks still not done:\n" + workers.logs()
        await asyncio.sleep(0.2)


async def _spans(store: StateStore, task_ids: list[str]) -> dict[str, tuple[dt.datetime, dt.datetime]]:
    """Each task's tool call: when it started and when it finished, from the journal."""
    spans = {}
    for task_id in task_ids:
        (op,) = [op for op in await store.list_ops(task_id) if op.kind is OpKind.TOOL]
        assert op.finished_at is not None
        spans[task_id] = (op.started_at, op.finished_at)
    return spans


def most_at_once(spans: list[tuple[dt.datetime, dt.datetime]]) -> int:
    """The most spans open at one instant (an end and a start at the same instant do not overlap)."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.fixture
async def store(url: str) -> AsyncIterator[StateStore]:
    opened = await open_store(url)
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_queue_of_concurrency_two_never_runs_three_at_once_across_three_workers(
    store: StateStore, workers: Workers
) -> None:
    await store.set_limit(Limit(key="queue:q", concurrency=2))
    rt = Runtime(store)
    task_ids = [await rt.submit(f"{HERE}:hold", {"seconds": 0.6}, queue="q") for _ in range(8)]

    workers.start(3)
    await _all_done(store, task_ids, workers)

    spans = list((await _spans(store, task_ids)).values())
    assert most_at_once(spans) == 2  # never three; and two at once, so the queue was used whole


async def test_a_partition_keeps_one_tenants_tasks_from_delaying_anothers(
    store: StateStore, workers: Workers
) -> None:
    await store.set_limit(Limit(key="queue:tenants", concurrency=1))
    rt = Runtime(store)
    busy = [
        await rt.submit(f"{HERE}:hold", {"seconds": 0.8}, queue="tenants", partition="a") for _ in range(5)
    ]
    other = await rt.submit(f"{HERE}:hold", {"seconds": 0.1}, queue="tenants", partition="b")

    workers.start(3)
    await _all_done(store, [*busy, other], workers)

    spans = await _spans(store, [*busy, other])
    a_spans = sorted(spans[task_id] for task_id in busy)
    assert most_at_once(a_spans) == 1  # tenant a: one at a time, across every worker
    assert spans[other][0] < a_spans[1][0]  # b ran while a's first task did, not after a's queue


async def test_a_place_held_by_a_killed_worker_comes_back_when_its_lease_expires(
    store: StateStore, workers: Workers, tmp_path: Path
) -> None:
    await store.set_limit(Limit(key="queue:k", concurrency=1))
    rt = Runtime(store)
    marker = tmp_path / "held"
    first = await rt.submit(f"{HERE}:hold_once", {"marker": str(marker), "seconds": 60}, queue="k")
    (doomed,) = workers.start(1)
    deadline = time.monotonic() + WAIT_FOR_ALL
    while not marker.exists():  # the first task holds the queue's one place now
        assert time.monotonic() < deadline, workers.logs()
        await asyncio.sleep(0.05)
    second = await rt.submit(f"{HERE}:hold", {"seconds": 0.1}, queue="k")

    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)
    killed_at = dt.datetime.now(dt.UTC)
    workers.start(1)
    await _all_done(store, [first, second], workers)

    spans = await _spans(store, [first, second])
    assert spans[second][0] > killed_at  # it waited for the place, which came back with the lease

"""`ratchet workers`: a real `ratchet worker`, idle, is seen with its slots until it stops.

The worker is a program of its own on a SQLite file or a PostgreSQL
database; `ratchet workers` is another, and ``GET /api/workers`` is the
real app over the same store. A SIGTERM stops the worker gracefully, and its
record goes with it.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from ratchet.records import WorkerPresence, utcnow
from ratchet.store import StateStore

from ..helpers.cli import RunRatchet, table_cells
from ..serve.support import client_for
from .task_support import (
    SIGNAL_TIMEOUT,
    start_ratchet,
    stop_with,
    submit,
    this_host,
    wait_for_file,
    with_store,
)


def _listed(url: str) -> list[WorkerPresence]:
    return with_store(url, lambda store: store.list_workers())


def wait_until_recorded(url: str, name: str, worker: subprocess.Popen[str]) -> WorkerPresence:
    """The worker's record once it wrote it; fail if the worker ends or time runs out first."""
    deadline = time.monotonic() + SIGNAL_TIMEOUT
    while not (found := [w for w in _listed(url) if w.name == name]):
        if worker.poll() is not None:
            out, err = worker.communicate()
            raise AssertionError(f"the worker ended ({worker.returncode}) first: {out} {err}")
        assert time.monotonic() < deadline, f"worker {name} was not recorded within {SIGNAL_TIMEOUT} s"
        time.sleep(0.05)
    return found[0]


def api_workers(url: str) -> list[dict[str, Any]]:
    async def read(store: StateStore) -> list[dict[str, Any]]:
        async with client_for(store) as client:
            answer = await client.get("/api/workers")
        assert answer.status_code == 200, answer.text
        listed: list[dict[str, Any]] = answer.json()
        return listed

    return with_store(url, read)


def test_an_idle_worker_is_listed_with_its_slots_and_is_gone_after_sigterm(
    run_ratchet: RunRatchet, tmp_path: Path, url: str
) -> None:
    worker = start_ratchet(
        tmp_path, "worker", "--name", "idle-one", "--concurrency", "3", "--lease-ttl", "6", "--store", url
    )
    try:
        recorded = wait_until_recorded(url, "idle-one", worker)
        as_json = run_ratchet("workers", "--json", "--store", url)
        as_table = run_ratchet("workers", "--store", url)
        from_api = api_workers(url)
    finally:
        out, err = stop_with(worker, signal.SIGTERM)

    assert (recorded.pid, recorded.concurrency, recorded.lease_ttl) == (worker.pid, 3, 6.0)
    assert recorded.expires_at == recorded.heartbeat_at + dt.timedelta(seconds=3 * 6.0)  # three lease TTLs
    assert recorded.started_at <= recorded.heartbeat_at <= utcnow()
    assert as_json.returncode == 0, as_json.stderr
    [shown] = json.loads(as_json.stdout)
    assert shown == from_api[0] | {
        "heartbeat_at": shown["heartbeat_at"],
        "heartbeat_age_seconds": shown["heartbeat_age_seconds"],
    }
    assert len(from_api) == 1
    for listed in (shown, from_api[0]):
        assert (listed["worker"], listed["pid"], listed["live"]) == ("idle-one", worker.pid, True)
        assert (listed["concurrency"], listed["slots_in_use"], listed["leases"]) == (3, 0, [])
        assert listed["expires_in_seconds"] is None  # it holds no lease
        assert listed["started_at"] == recorded.started_at.isoformat()
        assert listed["heartbeat_age_seconds"] >= 0
    assert as_table.returncode == 0, as_table.stderr
    header, _, row = as_table.stdout.splitlines()
    assert table_cells(header) == ["worker", "state", "host", "pid", "slots", "tasks", "started", "heartbeat"]
    cells = table_cells(row)
    assert cells[:6] == ["idle-one", "live", this_host(), str(worker.pid), "0/3", "-"]

    assert worker.returncode == 0, (out, err)
    assert _listed(url) == []
    after = run_ratchet("workers", "--store", url)
    assert after.returncode == 0, after.stderr
    assert after.stdout.startswith("no live worker on ")
    assert "`ratchet worker" in after.stdout
    assert run_ratchet("workers", "--json", "--store", url).stdout.strip() == "[]"
    assert api_workers(url) == []


def test_a_busy_worker_shows_the_slot_and_the_task_it_holds(
    run_ratchet: RunRatchet, tmp_path: Path, url: str
) -> None:
    marker = tmp_path / "lingering"
    task_id = submit(url, "lingers", marker=str(marker), seconds=60)
    # A `ratchet run` elsewhere holds a task of its own, without a record of itself.
    held = submit(url, "greet", who="ann")
    with_store(url, lambda store: store.claim_lease(held, "other-box:7", 60, host="other-box", pid=7))
    worker = start_ratchet(
        tmp_path, "worker", "--name", "busy-one", "--concurrency", "2", "--grace", "0.5", "--store", url
    )
    try:
        wait_for_file(marker, worker)
        as_table = run_ratchet("workers", "--store", url)
    finally:
        out, err = stop_with(worker, signal.SIGTERM)

    assert worker.returncode == 0, (out, err)
    assert as_table.returncode == 0, as_table.stderr
    rows = {cells[0]: cells for cells in map(table_cells, as_table.stdout.splitlines()[2:])}
    assert rows["busy-one"][:6] == ["busy-one", "live", this_host(), str(worker.pid), "1/2", task_id]
    assert rows["other-box:7"][:6] == ["other-box:7", "live", "other-box", "7", "1/-", held]
    assert rows["other-box:7"][6] == "-"  # no record of itself: no start time


def test_a_store_nothing_was_ever_written_to_has_no_workers_and_is_not_created(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"

    done = run_ratchet("workers", "--store", url)

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no live worker on ")
    assert not (tmp_path / "never.db").exists()

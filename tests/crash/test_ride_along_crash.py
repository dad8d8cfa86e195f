"""A worker SIGKILLed after a call's tool returned and before the task's next commit.

A keyed or safe-to-repeat call's result rides on the task's next commit
(docs/durability.md, "Results that ride along"), so a kill in between leaves
the call in doubt, as a kill while its tool ran would: the resume runs it
again, with the same idempotency key, and its effect happens once. An
unkeyed call's result is never left to ride: it is committed before the next
call starts, so the same kill leaves it succeeded and nobody is asked about
it. Each case runs on SQLite and PostgreSQL, with group commit on as in the
other crash suites.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from ratchet import Runtime, TaskStatus, open_store
from ratchet.records import Operation, OpStatus

from ..helpers.ledger import Ledger
from .flows import derived_key
from .harness import EXIT_COMPLETED, KILLED, WORKER_TIMEOUT, Stores, finish_worker, start_task_worker
from .ride_flows import FIRST_CALLS

TASK_ID = "crash-ride"
WORKFLOW = "tests.crash.ride_flows:ride_flow"


def _riding(store_url: str) -> str:
    """`store_url` with results riding along (off unless the URL says ``ride_along=on``)."""
    return store_url + ("&" if "?" in store_url else "?") + "ride_along=on"


def _submit(store_url: str, first: str, ledger: Ledger, marker: Path) -> None:
    async def submit() -> None:
        async with Runtime(store_url) as runtime:
            await runtime.submit(
                WORKFLOW,
                {"first": first, "ledger": str(ledger.path), "marker": str(marker)},
                task_id=TASK_ID,
            )

    asyncio.run(submit())


def _journal(store_url: str) -> tuple[TaskStatus, list[Operation], list[str]]:
    async def read() -> tuple[TaskStatus, list[Operation], list[str]]:
        store = await open_store(store_url)
        try:
            task = await store.get_task(TASK_ID)
            events = await store.list_events(TASK_ID)
            return task.status, await store.list_ops(TASK_ID), [e.kind for e in events]
        finally:
            await store.close()

    return asyncio.run(read())


def _kill_once_watching(store_url: str, marker: Path) -> None:
    """Start a worker, and SIGKILL it once `watch` runs (the first call returned, nothing since committed)."""
    worker = start_task_worker(store_url, TASK_ID)
    deadline = time.monotonic() + WORKER_TIMEOUT
    while not marker.exists():
        assert worker.poll() is None, f"the worker exited {worker.returncode} before the kill"
        assert time.monotonic() < deadline, "watch never ran"
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    assert finish_worker(worker) == KILLED


def _key_of(first: str) -> str:
    if first == "pay":
        return f"{TASK_ID}:0"  # its idempotency key: the task's id and the call's seq
    return derived_key(first, **FIRST_CALLS[first])


@pytest.mark.parametrize("first", ["pay", "hold_seat"])
def test_a_result_riding_along_when_the_worker_dies_is_run_again_with_its_key(
    first: str, stores: Stores, tmp_path: Path
) -> None:
    url, ledger = _riding(stores.fresh(tmp_path)), Ledger(tmp_path / "ledger.db")
    marker = tmp_path / "watching"
    ledger.create()
    _submit(url, first, ledger, marker)

    _kill_once_watching(url, marker)

    # The tool acted, but its result had not committed: the call is in doubt, or unrecorded.
    key = _key_of(first)
    assert ledger.effects() == {(first, key): 1}
    _, ops, _ = _journal(url)
    if first == "pay":  # keyed: its intent committed, its result was riding
        assert [(op.seq, op.name, op.status) for op in ops] == [(0, "pay", OpStatus.STARTED)]
    else:  # safe to repeat: no intent, so nothing of it is in the journal
        assert ops == []

    assert finish_worker(start_task_worker(url, TASK_ID)) == EXIT_COMPLETED

    status, ops, events = _journal(url)
    assert status is TaskStatus.COMPLETED
    assert [(op.seq, op.name, op.status) for op in ops] == [
        (0, first, OpStatus.SUCCEEDED),
        (1, "watch", OpStatus.SUCCEEDED),
    ]
    assert ledger.invocations() == {(first, key): 2}  # run again, with the same key
    assert ledger.effects() == {(first, key): 1}  # which the service honoured: once
    assert ("in_doubt_rerun" in events) is (first == "pay")
    assert "waiting" not in events


def test_an_unkeyed_result_never_rides_along(stores: Stores, tmp_path: Path) -> None:
    url, ledger = _riding(stores.fresh(tmp_path)), Ledger(tmp_path / "ledger.db")
    marker = tmp_path / "watching"
    ledger.create()
    _submit(url, "log_line", ledger, marker)

    _kill_once_watching(url, marker)

    # Killed at the same moment, the unkeyed call's result had committed before `watch` began.
    _, ops, _ = _journal(url)
    assert [(op.seq, op.name, op.status) for op in ops] == [(0, "log_line", OpStatus.SUCCEEDED)]

    assert finish_worker(start_task_worker(url, TASK_ID)) == EXIT_COMPLETED

    status, ops, events = _journal(url)
    assert status is TaskStatus.COMPLETED
    assert [op.status for op in ops] == [OpStatus.SUCCEEDED, OpStatus.SUCCEEDED]
    key = _key_of("log_line")
    assert ledger.invocations() == {("log_line", key): 1}  # replayed, never run again
    assert ledger.effects() == {("log_line", key): 1}
    assert "in_doubt_rerun" not in events

"""A store that fails while a task runs is not the task's failure.

The disk the SQLite store lives on fills up just after a tool's side effect
(tests/helpers/disk.py: a real tmpfs where the tests may mount one). The run
stops with `StoreFull`; the task stays running, its step open, its lease let
go, with a ``store_failed`` event when the store still takes one. Once space is
freed, resuming it (or a worker taking it again) completes it, with each side
effect exactly once; a failure the full disk kept from being recorded is
recorded then.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from ratchet.engine import Worker
from ratchet.engine.run.runner import run_task
from ratchet.errors import StoreFull
from ratchet.records import OpStatus, StepStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.disk import SmallDisk
from ..helpers.ledger import Ledger
from .store_flows import FAILING, REFERENCE

ROOM = 64 * 1024  # what the full disk leaves: enough for an event, not for the tool's result


@pytest.fixture
def book(tmp_path: Path) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.db")  # off the small disk: the world, not the store
    ledger.create()
    return ledger


def inputs(small_disk: SmallDisk, book: Ledger, tmp_path: Path) -> dict[str, Any]:
    marker = tmp_path / "fill-once"
    marker.touch()
    return {"ledger": book.path, "disk": str(small_disk.directory), "fill_marker": str(marker), "leave": ROOM}


def each_effect_once(book: Ledger) -> None:
    effects = book.effects()
    assert set(effects.values()) == {1}
    assert sorted(book.effect_output(tool, key) for tool, key in effects) == ["first", "second"]


async def assert_stopped_resumable(store: StateStore, task_id: str) -> None:
    task = await store.get_task(task_id)
    assert (task.status, task.error) == (TaskStatus.RUNNING, None)
    assert [(s.name, s.status) for s in await store.list_steps(task_id)] == [("first", StepStatus.CURRENT)]
    kinds = [event.kind for event in await store.list_events(task_id)]
    assert "task_failed" not in kinds and "step_failed" not in kinds
    assert OpStatus.FAILED not in {op.status for op in await store.list_ops(task_id)}


async def test_a_full_disk_stops_the_task_resumable_and_resume_completes_it_once_freed(
    small_disk: SmallDisk, book: Ledger, tmp_path: Path
) -> None:
    async with Runtime(f"sqlite:///{small_disk.directory / 'r.db'}") as rt:
        task_id = await rt.submit(REFERENCE, inputs(small_disk, book, tmp_path), queue=False)
        try:
            with pytest.raises(StoreFull, match="free space"):
                await rt.resume(task_id)
            await assert_stopped_resumable(rt.store, task_id)
            [said] = [e for e in await rt.store.list_events(task_id) if e.kind == "store_failed"]
            assert f"ratchet resume {task_id}" in said.message and "is full" in said.message
            lease = await rt.store.get_lease(task_id)
            assert lease is None or lease.released
        finally:
            small_disk.free()

        done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED
    assert done.result == ["delivered first", "delivered second"]
    each_effect_once(book)


async def test_a_worker_takes_the_task_again_once_the_store_is_fixed(
    small_disk: SmallDisk, book: Ledger, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ratchet.worker")
    async with Runtime(f"sqlite:///{small_disk.directory / 'r.db'}") as rt:
        task_id = await rt.submit(REFERENCE, inputs(small_disk, book, tmp_path))
        worker = Worker(rt.store, poll_interval=0.05, lease_ttl=5.0)
        worker.STORE_RETRY_MAX = 0.5  # take the task again soon, not after the default pause
        stop = asyncio.Event()
        job = asyncio.create_task(worker.run(stop))
        try:
            async with asyncio.timeout(30):
                while "resumable, by the store's failure" not in caplog.text:
                    await asyncio.sleep(0.05)
            assert (await rt.store.get_task(task_id)).status is TaskStatus.RUNNING
            small_disk.free()
            async with asyncio.timeout(30):
                while not (task := await rt.store.get_task(task_id)).status.is_terminal:
                    await asyncio.sleep(0.05)
        finally:
            small_disk.free()
            stop.set()
            await asyncio.wait_for(job, 10)

    assert task.status is TaskStatus.COMPLETED
    assert "cannot run here" not in caplog.text
    each_effect_once(book)


async def test_a_failure_the_full_disk_kept_from_being_recorded_is_recorded_on_resume(
    small_disk: SmallDisk, tmp_path: Path
) -> None:
    marker = tmp_path / "fill-once"
    marker.touch()
    async with Runtime(f"sqlite:///{small_disk.directory / 'r.db'}") as rt:
        task_id = await rt.submit(FAILING, {"disk": str(small_disk.directory), "fill_marker": str(marker)})
        try:
            with pytest.raises(StoreFull):
                await rt.resume(task_id)
            task = await rt.store.get_task(task_id)
            assert (task.status, task.error) == (TaskStatus.RUNNING, None)
        finally:
            small_disk.free()

        # The full disk may have kept this process from letting its lease go: take the task over.
        done = await run_task(rt.store, task_id, take_over=True)

    assert done.status is TaskStatus.FAILED
    assert (done.error or "").startswith("ValueError: the workflow's own failure xxx")

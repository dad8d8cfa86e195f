"""Durable sleep and the worker: what it wakes, what it leaves for people, what it adopts."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import pytest

from ratchet import Task
from ratchet.engine import Worker
from ratchet.records import Event, TaskStatus, Trigger, WaitReason, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.builders import make_task
from .flows import FLOWS, entries
from .support import run_until_crash


@pytest.fixture
async def worker(store: StateStore) -> AsyncIterator[Worker]:
    """A worker running in the background until the test ends."""
    running = Worker(store, poll_interval=0.05, lease_ttl=5.0)
    stop = asyncio.Event()
    job = asyncio.create_task(running.run(stop))
    yield running
    stop.set()
    await asyncio.wait_for(job, 5.0)


async def settled(store: StateStore, task_id: str, timeout: float = 5.0) -> tuple[Task, dt.datetime]:
    """Wait until the task ends; return it and when it was first seen ended."""
    async with asyncio.timeout(timeout):
        while not (task := await store.get_task(task_id)).status.is_terminal:
            await asyncio.sleep(0.02)
    return task, utcnow()


def wakes(triggers: list[Trigger]) -> list[Trigger]:
    return [t for t in triggers if t.kind == "wake"]


async def test_sleep_suspends_the_task_with_a_wake_trigger(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    asked = utcnow()
    task = await rt.run(f"{FLOWS}:sleeper", {"ledger": ledger, "seconds": 0.5})

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    [wake] = wakes(await store.list_triggers(task.id))
    assert asked + dt.timedelta(seconds=0.5) <= wake.fire_at <= utcnow() + dt.timedelta(seconds=0.5)
    assert entries(ledger, "after") == []


async def test_resuming_before_the_wake_time_suspends_again_without_a_second_trigger(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:sleeper", {"ledger": ledger, "seconds": 30.0})
    [wake] = wakes(await store.list_triggers(task.id))

    again = await Runtime(store).resume(task.id)

    assert (again.status, again.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    [again_wake] = wakes(await store.list_triggers(task.id))
    assert (again_wake.fire_at, again_wake.dedupe_key) == (wake.fire_at, wake.dedupe_key)
    assert len(entries(ledger, "before")) == 1
    assert entries(ledger, "after") == []


async def test_the_worker_wakes_a_sleeping_task_when_its_time_comes(
    store: StateStore, rt: Runtime, ledger: str, worker: Worker
) -> None:
    task_id = await rt.submit(f"{FLOWS}:sleeper", {"ledger": ledger, "seconds": 0.5})
    async with asyncio.timeout(5):  # the worker runs it up to its durable sleep
        while not (found := wakes(await store.list_triggers(task_id))):
            await asyncio.sleep(0.01)
    [wake] = found

    done, seen_at = await settled(store, task_id)

    assert done.status is TaskStatus.COMPLETED
    assert done.result == "woke"
    assert seen_at >= wake.fire_at
    assert [len(entries(ledger, label)) for label in ("before", "after")] == [1, 1]
    assert await store.list_triggers(task_id) == []


async def test_the_worker_starts_a_submitted_task(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED
    assert len(entries(ledger, "record")) == 1


async def test_wait_returns_when_a_worker_finished_the_task(
    store: StateStore, rt: Runtime, ledger: str, worker: Worker
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})

    task = await rt.wait(task_id, timeout=5.0, poll=0.02)

    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.result, dict)
    assert task.result["label"] == "record"


async def test_wait_returns_when_the_task_waits_on_a_person(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(
        rt, "first_call", {"ledger": ledger, "tool_name": "reconcile_ask"}, queue=False
    )

    stop = asyncio.Event()
    working = asyncio.create_task(Worker(store, poll_interval=0.05, lease_ttl=5.0).run(stop))
    try:
        task = await rt.wait(task_id, timeout=5.0, poll=0.02)
    finally:
        stop.set()
        await asyncio.wait_for(working, 5.0)

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.IN_DOUBT)
    assert len(entries(ledger, "reconcile_ask")) == 1


@pytest.mark.parametrize("reason", [WaitReason.APPROVAL, WaitReason.INPUT, WaitReason.IN_DOUBT])
async def test_the_worker_never_runs_a_task_waiting_on_a_person(
    store: StateStore, ledger: str, reason: WaitReason
) -> None:
    task = make_task(
        "waits",
        status=TaskStatus.WAITING,
        waiting_on=reason,
        started_at=utcnow(),
        workflow=f"{FLOWS}:first_call",
        inputs_params={"ledger": ledger, "tool_name": "record"},
    )
    await store.create_task(task)
    await store.put_trigger(Trigger(kind="wake", task_id=task.id))
    events = await store.list_events(task.id)

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    stored = await store.get_task(task.id)
    assert (stored.status, stored.waiting_on) == (TaskStatus.WAITING, reason)
    assert entries(ledger) == []
    assert await store.list_events(task.id) == events
    assert await store.list_orphaned_tasks() == []


async def test_the_worker_adopts_a_running_task_whose_lease_expired(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    await store.delete_triggers(task_id)
    dead = await store.claim_lease(task_id, "dead-worker", 0.1)
    task = await store.get_task(task_id)
    async with store.transaction(fence=dead) as tx:
        await tx.update_task(task.transition(TaskStatus.RUNNING, started_at=utcnow()))
        await tx.append_event(Event(task_id=task_id, kind="task_started", message="started by dead-worker"))
    await asyncio.sleep(0.15)

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED
    assert len(entries(ledger, "record")) == 1
    first_claim, *_ = await store.lease_history(task_id)
    assert first_claim.owner == "dead-worker"


async def test_the_worker_leaves_a_running_task_whose_lease_is_live(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    await store.delete_triggers(task_id)
    alive = await store.claim_lease(task_id, "busy-worker", 30.0)
    task = await store.get_task(task_id)
    async with store.transaction(fence=alive) as tx:
        await tx.update_task(task.transition(TaskStatus.RUNNING, started_at=utcnow()))

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    assert (await store.get_task(task_id)).status is TaskStatus.RUNNING
    assert entries(ledger) == []


async def test_a_tool_or_workflow_that_exits_fails_its_task_and_the_worker_goes_on(
    store: StateStore, ledger: str
) -> None:
    async with Runtime(store) as rt:
        exiting = await rt.submit(f"{FLOWS}:calls_an_exiting_tool")
        exits_itself = await rt.submit(f"{FLOWS}:exits_itself")
        healthy = await rt.submit(f"{FLOWS}:stepped", {"ledger": ledger})

    await asyncio.wait_for(Worker(store, poll_interval=0.05).run(until_idle=True), 30)

    failed = await store.get_task(exiting)
    assert failed.status is TaskStatus.FAILED
    assert "it exited (SystemExit: set API_KEY)" in (failed.error or ""), failed.error
    itself = await store.get_task(exits_itself)
    assert (itself.status, itself.error) == (
        TaskStatus.FAILED,
        "the workflow exited instead of raising (SystemExit: set API_KEY)",
    )
    assert (await store.get_task(healthy)).status is TaskStatus.COMPLETED

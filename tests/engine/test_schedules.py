"""Scheduled tasks: each due time makes one task, whichever worker fires it; a later start waits."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from ratchet.engine import Worker
from ratchet.errors import InputError
from ratchet.records import TaskStatus, WaitReason, utcnow
from ratchet.runtime import Runtime
from ratchet.schedules import SCHEDULE_TRIGGER, next_due, schedule_trigger
from ratchet.store import StateStore

from .flows import FLOWS, entries
from .schedule_support import EVERY_MINUTE, backdated, work


async def test_a_schedule_waits_for_its_first_due_time(store: StateStore, rt: Runtime, ledger: str) -> None:
    queued = await rt.schedule(
        f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "record"}, every="0 9 * * 1", name="weekly"
    )
    assert queued.kind == SCHEDULE_TRIGGER and queued.fire_at > utcnow()
    assert queued.fire_at.weekday() == 0 and (queued.fire_at.hour, queued.fire_at.minute) == (9, 0)
    await work(store)
    assert await store.list_tasks() == []
    [(plan, due)] = await rt.schedules()
    assert (plan.id, plan.cron, due) == (queued.payload["id"], "0 9 * * 1", queued.fire_at)


async def test_each_missed_due_time_makes_one_task_and_the_next_is_queued(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    _, due = await backdated(rt, ledger, minutes=4)

    await work(store)

    tasks = await store.list_tasks()
    assert sorted(task.id for task in tasks) == sorted(f"nightly-{t:%Y%m%dT%H%M%SZ}" for t in due)
    assert all(task.status is TaskStatus.COMPLETED for task in tasks)
    assert len(entries(ledger, "record")) == len(due)
    [(_, next_time)] = await rt.schedules()
    assert next_time == next_due(EVERY_MINUTE, due[-1]) and next_time > utcnow()


async def test_workers_at_once_fire_each_due_time_once(store: StateStore, rt: Runtime, ledger: str) -> None:
    _, due = await backdated(rt, ledger, minutes=6)

    await work(store, workers=4)

    tasks = await store.list_tasks()
    assert len(tasks) == len(due) == len({task.id for task in tasks})
    assert len(entries(ledger, "record")) == len(due)
    assert len(await rt.schedules()) == 1


async def test_unschedule_stops_a_schedule_and_keeps_its_tasks(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    plan, due = await backdated(rt, ledger, minutes=1)
    await work(store)
    assert await rt.unschedule(plan.id) is True
    assert await rt.unschedule(plan.id) is False
    assert await rt.schedules() == []
    assert len(await store.list_tasks()) == len(due)


async def test_a_bad_cron_expression_is_refused(rt: Runtime, ledger: str) -> None:
    with pytest.raises(InputError, match="not a cron expression"):
        await rt.schedule(f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "record"}, every="every day")
    assert await rt.schedules() == []


async def test_a_task_submitted_for_later_starts_no_sooner(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    start = utcnow() + dt.timedelta(seconds=1.0)
    task_id = await rt.submit(f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "record"}, at=start)

    await work(store)
    assert (await store.get_task(task_id)).status is TaskStatus.QUEUED

    worker = Worker(store, poll_interval=0.02, lease_ttl=5.0)
    stop = asyncio.Event()
    job = asyncio.create_task(worker.run(stop))
    async with asyncio.timeout(10):
        while not (task := await store.get_task(task_id)).status.is_terminal:
            await asyncio.sleep(0.02)
    stop.set()
    await job
    assert task.status is TaskStatus.COMPLETED
    assert task.started_at is not None and task.started_at >= start


async def test_a_schedule_whose_template_was_changed_in_the_store_makes_tasks_that_wait(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    """A schedule's template is data in a trigger: a writer who points it at other code gets tasks
    that wait for an operator, since the template's seal does not hold."""
    plan, due = await backdated(rt, ledger, minutes=1)
    [queued] = await store.list_triggers()
    forged = plan.template.model_copy(update={"workflow": f"{FLOWS}:stepped"})
    await store.delete_trigger(queued.id)
    await store.put_trigger(schedule_trigger(plan.model_copy(update={"template": forged}), due[0]))

    await work(store)

    tasks = await store.list_tasks()
    assert tasks and all((t.status, t.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE) for t in tasks)
    assert entries(ledger) == []

"""Helpers of the schedule tests: a schedule with missed due times, and firing them as a worker does."""

from __future__ import annotations

import asyncio
import datetime as dt

from ratchet.engine import Worker
from ratchet.records import Task, utcnow
from ratchet.runtime import Runtime
from ratchet.schedules import SCHEDULE_TRIGGER, Overlap, Schedule, fire_schedule, next_due, schedule_trigger
from ratchet.store import StateStore

from .flows import FLOWS

EVERY_MINUTE = "* * * * *"


async def backdated(
    rt: Runtime, ledger: str, minutes: int, overlap: Overlap = "allow"
) -> tuple[Schedule, list[dt.datetime]]:
    """A schedule made `minutes` ago that no worker has fired since: its missed due times.

    ``allow`` by default: every missed due time makes its task, whatever the runs before it.
    """
    queued = await rt.schedule(
        f"{FLOWS}:call_one",
        {"ledger": ledger, "tool_name": "record"},
        every=EVERY_MINUTE,
        schedule_id="nightly",
        overlap=overlap,
    )
    plan = Schedule.from_trigger(queued)
    await rt.store.delete_trigger(queued.id)
    due = [next_due(EVERY_MINUTE, utcnow() - dt.timedelta(minutes=minutes))]
    while (following := next_due(EVERY_MINUTE, due[-1])) <= utcnow():
        due.append(following)
    await rt.store.put_trigger(schedule_trigger(plan, due[0]))
    return plan, due


async def work(store: StateStore, workers: int = 1) -> None:
    """Real workers, until nothing is due."""
    crew = [Worker(store, poll_interval=0.02, lease_ttl=5.0, concurrency=3) for _ in range(workers)]
    async with asyncio.timeout(30):
        await asyncio.gather(*(member.run(until_idle=True) for member in crew))


async def fire_due_schedules(store: StateStore) -> list[Task]:
    """Fire every due schedule trigger as a worker's claim does, and run no task; return the tasks made.

    Without a worker the tasks made stay queued: a later due time finds its
    schedule's last run still going, as it would behind a slow run.
    """
    made: list[Task] = []
    while True:
        async with store.transaction() as tx:
            claimed = await tx.claim_due_triggers(limit=10)
            for trigger in claimed:
                if trigger.kind == SCHEDULE_TRIGGER:
                    if (task := await fire_schedule(tx, trigger)) is not None:
                        made.append(task)
                else:  # a task's start: queued again for the worker that runs it later
                    await tx.put_trigger(trigger.model_copy(update={"id": 0}))
        if not any(trigger.kind == SCHEDULE_TRIGGER for trigger in claimed):
            return made

"""Priority: workers take the most urgent due work first, and a task's wake-ups keep its priority.

Runs on every store (memory, SQLite, PostgreSQL), as the engine suite does.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import JsonValue

from ratchet.engine import Worker
from ratchet.errors import InputError
from ratchet.records import TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.schedules import fire_schedule
from ratchet.store import StateStore

from .flows import FLOWS, entries


async def test_a_worker_takes_the_urgent_task_submitted_last_first(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    def inputs(label: str) -> dict[str, JsonValue]:
        return {"ledger": ledger, "tool_name": "record", "args": {"label": label}}

    routine = await rt.submit(f"{FLOWS}:call_one", inputs("routine"), priority=9)
    default = await rt.submit(f"{FLOWS}:call_one", inputs("default"))
    urgent = await rt.submit(f"{FLOWS}:call_one", inputs("urgent"), priority=0)

    stop = asyncio.Event()
    working = asyncio.create_task(Worker(store, concurrency=1, poll_interval=0.05, lease_ttl=5.0).run(stop))
    try:
        for task_id in (routine, default, urgent):
            assert (await rt.wait(task_id, timeout=10.0, poll=0.02)).status is TaskStatus.COMPLETED
    finally:
        stop.set()
        await asyncio.wait_for(working, 5.0)

    ran = [e["label"] for e in entries(ledger) if e["label"] != "warmup"]
    assert ran == ["urgent", "default", "routine"]


async def test_the_claim_takes_the_high_priority_trigger_before_the_low_one_queued_first(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    low = await rt.submit(f"{FLOWS}:sequence", {"ledger": ledger}, priority=8)
    high = await rt.submit(f"{FLOWS}:sequence", {"ledger": ledger}, priority=1)
    [first] = await store.claim_due_triggers(limit=1)
    [second] = await store.claim_due_triggers(limit=1)
    assert (first.task_id, first.priority, second.task_id, second.priority) == (high, 1, low, 8)


async def test_the_task_keeps_its_priority_and_its_wake_up_takes_it(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(f"{FLOWS}:sleeper", {"ledger": ledger, "seconds": 30.0}, priority=2)

    assert (task.status, task.waiting_on, task.priority) == (TaskStatus.WAITING, WaitReason.TIMER, 2)
    [wake] = [t for t in await store.list_triggers(task.id) if t.kind == "wake"]
    assert wake.priority == 2


async def test_a_schedule_makes_tasks_of_its_priority(store: StateStore, rt: Runtime, ledger: str) -> None:
    schedule = await rt.schedule(f"{FLOWS}:sequence", {"ledger": ledger}, every="* * * * *", priority=1)
    assert schedule.priority == 1
    async with store.transaction() as tx:
        [claimed] = await tx.claim_due_triggers(now=schedule.fire_at)
        made = await fire_schedule(tx, claimed)
    assert made is not None and made.priority == 1
    [start] = await store.list_triggers(made.id)
    assert start.priority == 1


@pytest.mark.parametrize("priority", [-1, 10, True, 2.5])
async def test_a_priority_out_of_range_is_refused(rt: Runtime, ledger: str, priority: object) -> None:
    with pytest.raises(InputError, match="from 0 \\(most urgent\\) to 9"):
        await rt.submit(f"{FLOWS}:sequence", {"ledger": ledger}, priority=priority)  # type: ignore[arg-type]
    assert await rt.store.list_tasks() == []

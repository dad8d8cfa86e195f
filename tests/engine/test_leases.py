"""Leases and fencing: one worker at a time, and a worker that lost its lease writes nothing."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import sys
import time

import pytest

from ratchet.engine import WorkerIdentity, run_task
from ratchet.engine.run.holders import pid_space_here
from ratchet.errors import CannotResume, LeaseLost
from ratchet.records import OpStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS, entries

A = WorkerIdentity(name="worker-A", host="host-a", pid=101)
B = WorkerIdentity(name="worker-B", host="host-b", pid=202)


async def test_a_task_held_by_a_live_worker_cannot_be_run_by_another(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    held = await store.claim_lease(task_id, A.name, 30.0, host=A.host, pid=A.pid)
    assert held is not None

    with pytest.raises(CannotResume, match="worker-A"):
        await run_task(store, task_id, worker=B)

    assert entries(ledger) == []
    assert (await store.get_task(task_id)).status is TaskStatus.QUEUED
    assert await store.get_lease(task_id) == held


async def test_a_worker_whose_lease_was_taken_over_writes_nothing_more(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(
        f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "record", "args": {"delay": 0.5}}
    )
    run_a = asyncio.create_task(run_task(store, task_id, worker=A, lease_ttl=30.0))
    while (await store.get_op(task_id, 1)) is None:  # A is inside the slow call now
        await asyncio.sleep(0.01)
    lease_b = await store.claim_lease(task_id, B.name, 30.0, host=B.host, pid=B.pid, take_over=True)
    assert lease_b is not None
    ops, events = await store.list_ops(task_id), await store.list_events(task_id)

    with pytest.raises(LeaseLost):
        await run_a

    assert len(entries(ledger, "record")) == 1  # the effect happened; its result was not written
    assert await store.list_ops(task_id) == ops
    op = await store.get_op(task_id, 1)
    assert op is not None and op.status is OpStatus.STARTED
    assert await store.list_events(task_id) == events
    assert (await store.get_task(task_id)).status is TaskStatus.RUNNING
    assert await store.get_lease(task_id) == lease_b


async def test_the_heartbeat_stops_a_worker_whose_lease_was_taken_over(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(
        f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "record", "args": {"delay": 3.0}}
    )
    run_a = asyncio.create_task(run_task(store, task_id, worker=A, lease_ttl=0.3))
    while (await store.get_op(task_id, 1)) is None:
        await asyncio.sleep(0.01)
    lease_b = await store.claim_lease(task_id, B.name, 30.0, take_over=True)
    started = time.monotonic()

    with pytest.raises(LeaseLost):
        await run_a

    assert time.monotonic() - started < 1.0  # the next beat noticed; the 3 s call was cancelled
    assert entries(ledger, "record") == []
    op = await store.get_op(task_id, 1)
    assert op is not None and op.status is OpStatus.STARTED
    assert await store.get_lease(task_id) == lease_b


async def test_resume_takes_over_from_a_dead_process_on_this_host(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    gone = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await gone.wait()
    await store.claim_lease(
        task_id, "gone-worker", 30.0, host=socket.gethostname(), pid=gone.pid, pid_space=pid_space_here()
    )

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert len(entries(ledger, "record")) == 1


async def test_a_fenced_write_with_a_replaced_lease_is_refused(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    lease_a = await store.claim_lease(task_id, A.name, 30.0)
    await store.claim_lease(task_id, B.name, 30.0, take_over=True)
    events = await store.list_events(task_id)

    with pytest.raises(LeaseLost):
        async with store.transaction(fence=lease_a) as tx:
            await tx.update_task((await tx.get_task(task_id)).transition(TaskStatus.RUNNING))

    assert (await store.get_task(task_id)).status is TaskStatus.QUEUED
    assert await store.list_events(task_id) == events


async def test_the_heartbeat_keeps_a_short_lease_alive_through_a_long_call(
    store: StateStore, ledger: str
) -> None:
    rt = Runtime(store, identity=A, lease_ttl=0.6)
    task_id = await rt.submit(f"{FLOWS}:slow_calls", {"ledger": ledger, "seconds": 1.5})

    async def intrude() -> object:
        await asyncio.sleep(1.0)  # past the first lease's expiry, were it not renewed
        return await store.claim_lease(task_id, B.name, 30.0, host=B.host, pid=B.pid)

    task, intruder = await asyncio.gather(rt.resume(task_id), intrude())

    assert intruder is None
    assert task.status is TaskStatus.COMPLETED
    (claim,) = await store.lease_history(task_id)
    assert claim.owner == A.name and claim.released
    # One claim on a 0.6 s lease held the task through the whole 1.5 s call: renewed.
    assert claim.granted_at is not None
    assert claim.expires_at - claim.granted_at >= dt.timedelta(seconds=1.4)


async def test_resume_takes_over_a_lease_whose_expiry_passed(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"})
    await store.claim_lease(task_id, "dead-worker", 0.05)
    await asyncio.sleep(0.1)

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert [lease.owner for lease in await store.lease_history(task_id)] == ["dead-worker", rt.identity.name]

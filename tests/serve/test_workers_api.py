"""``GET /api/workers``: every live worker, idle ones included, with its slots, and whoever holds a lease.

Workers are made as the store keeps them: their records of themselves
(`WorkerPresence`, as `ratchet worker` writes them) and their leases, each
at a chosen time. A worker run in this process (`Worker`) shows its slot in
use while its task runs. On every store: memory, SQLite, PostgreSQL.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from ratchet.engine import Worker
from ratchet.engine.run.holders import WorkerIdentity
from ratchet.records import WorkerPresence, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore, open_store

from ..engine.flows import FLOWS
from .support import client_for


@pytest.fixture(params=["memory", "database"])
async def each_store(request: pytest.FixtureRequest, api_store: StateStore) -> AsyncIterator[StateStore]:
    """The API's stores (SQLite, PostgreSQL) and the memory store."""
    if request.param == "database":
        yield api_store
        return
    store = await open_store("memory://")
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def client(each_store: StateStore) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(each_store) as served:
        yield served


def presence(name: str, heard: dt.datetime, *, concurrency: int = 4, ttl: float = 30.0) -> WorkerPresence:
    """Worker `name`'s record as its heartbeat at `heard` wrote it."""
    return WorkerPresence(
        name=name,
        host="box",
        pid=100 + len(name),
        concurrency=concurrency,
        lease_ttl=ttl,
        started_at=heard - dt.timedelta(minutes=5),
        heartbeat_at=heard,
        expires_at=heard + dt.timedelta(seconds=3 * ttl),
    )


async def listed(client: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    answer = await client.get("/api/workers")
    assert answer.status_code == 200, answer.text
    workers: list[dict[str, Any]] = answer.json()
    assert [worker["worker"] for worker in workers] == sorted(worker["worker"] for worker in workers)
    return {worker["worker"]: worker for worker in workers}


async def test_idle_busy_unrecorded_and_gone_workers(
    client: httpx.AsyncClient, each_store: StateStore, ledger: str
) -> None:
    rt = Runtime(each_store)
    busy_task, run_task, crashed_task = [
        await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"}) for _ in range(3)
    ]
    now = utcnow()
    await each_store.record_worker(presence("idle", now - dt.timedelta(seconds=5), concurrency=3))
    await each_store.record_worker(presence("busy", now - dt.timedelta(seconds=2), concurrency=2))
    await each_store.claim_lease(
        busy_task, "busy", 30, host="box", pid=104, now=now - dt.timedelta(seconds=2)
    )
    # A `ratchet run` holds its task without a record of itself.
    await each_store.claim_lease(
        run_task, "box:77", 30, host="box", pid=77, now=now - dt.timedelta(seconds=1)
    )
    # Killed: its record and its lease expired; its task is not taken over yet.
    await each_store.record_worker(presence("crashed", now - dt.timedelta(seconds=300)))
    await each_store.claim_lease(
        crashed_task, "crashed", 30, host="box", pid=107, now=now - dt.timedelta(seconds=300)
    )
    # Killed while idle: nothing of it is left to act on.
    await each_store.record_worker(presence("gone-idle", now - dt.timedelta(seconds=300)))

    workers = await listed(client)

    assert sorted(workers) == ["box:77", "busy", "crashed", "idle"]
    idle, busy, unrecorded, crashed = (workers[name] for name in ("idle", "busy", "box:77", "crashed"))
    assert (idle["live"], idle["concurrency"], idle["slots_in_use"], idle["leases"]) == (True, 3, 0, [])
    assert (idle["host"], idle["pid"]) == ("box", 104)
    assert idle["expires_in_seconds"] is None  # it holds no lease
    assert dt.datetime.fromisoformat(idle["started_at"]) == now - dt.timedelta(seconds=5, minutes=5)
    assert dt.datetime.fromisoformat(idle["heartbeat_at"]) == now - dt.timedelta(seconds=5)
    assert idle["heartbeat_age_seconds"] >= 5
    assert (busy["live"], busy["concurrency"], busy["slots_in_use"]) == (True, 2, 1)
    assert [lease["task_id"] for lease in busy["leases"]] == [busy_task]
    assert 0 < busy["expires_in_seconds"] <= 28
    assert (unrecorded["live"], unrecorded["concurrency"], unrecorded["started_at"]) == (True, None, None)
    assert (unrecorded["slots_in_use"], unrecorded["pid"]) == (1, 77)
    # Gone, it is known by its leases alone: its record no longer counts.
    assert (crashed["live"], crashed["concurrency"], crashed["slots_in_use"]) == (False, None, 0)
    assert [lease["task_id"] for lease in crashed["leases"]] == [crashed_task]
    assert crashed["expires_in_seconds"] < 0
    assert dt.datetime.fromisoformat(crashed["heartbeat_at"]) == now - dt.timedelta(seconds=300)


async def test_a_running_worker_shows_the_slot_its_task_holds(
    client: httpx.AsyncClient, each_store: StateStore, ledger: str
) -> None:
    task_id = await Runtime(each_store).submit(
        f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "slow", "args": {"seconds": 60}}
    )
    worker = Worker(
        each_store,
        identity=WorkerIdentity(name="w-1"),
        concurrency=2,
        lease_ttl=3,
        poll_interval=0.05,
        grace=0.1,
    )
    stop = asyncio.Event()
    job = asyncio.create_task(worker.run(stop))
    try:
        async with asyncio.timeout(10):
            while (shown := (await listed(client)).get("w-1")) is None or shown["slots_in_use"] == 0:
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await asyncio.wait_for(job, 10)

    assert (shown["live"], shown["concurrency"], shown["slots_in_use"]) == (True, 2, 1)
    assert [lease["task_id"] for lease in shown["leases"]] == [task_id]
    assert await listed(client) == {}  # stopped: its record removed, its lease released

"""A worker's presence: it records itself as it starts, at each heartbeat, and removes its record as it stops.

Every store runs these. The worker runs in this process (`Worker.run`); a
real `ratchet worker` program is tests/cli/test_cli_workers.py's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
from collections.abc import AsyncIterator

import pytest

from ratchet.engine import Worker
from ratchet.engine.run.holders import WorkerIdentity
from ratchet.records import WorkerPresence, utcnow
from ratchet.store import StateStore

TTL = 0.6  # a heartbeat every 0.2 s


async def recorded(store: StateStore, name: str, *, after: dt.datetime | None = None) -> WorkerPresence:
    """The worker's record once it is there (and heard from after `after`, when given)."""
    async with asyncio.timeout(10):
        while True:
            found = [worker for worker in await store.list_workers() if worker.name == name]
            if found and (after is None or found[0].heartbeat_at > after):
                return found[0]
            await asyncio.sleep(0.02)


@pytest.fixture
async def working(store: StateStore) -> AsyncIterator[asyncio.Event]:
    """A worker named ``w-idle`` with three slots, idle, in the background; set the event to stop it."""
    worker = Worker(
        store, identity=WorkerIdentity(name="w-idle"), concurrency=3, lease_ttl=TTL, poll_interval=0.05
    )
    stop = asyncio.Event()
    job = asyncio.create_task(worker.run(stop))
    yield stop
    stop.set()
    await asyncio.wait_for(job, 10)


async def test_an_idle_worker_records_its_slots_and_beats(store: StateStore, working: asyncio.Event) -> None:
    first = await recorded(store, "w-idle")
    later = await recorded(store, "w-idle", after=first.heartbeat_at)

    assert (first.host, first.pid, first.concurrency, first.lease_ttl) == (
        socket.gethostname(),
        os.getpid(),
        3,
        TTL,
    )
    assert first.started_at <= first.heartbeat_at <= later.heartbeat_at <= utcnow()
    assert later.started_at == first.started_at  # the same run of the worker, heard from again
    assert later.expires_at == later.heartbeat_at + dt.timedelta(seconds=3 * TTL)


async def test_a_worker_that_stops_removes_its_record(store: StateStore, working: asyncio.Event) -> None:
    await recorded(store, "w-idle")

    working.set()
    async with asyncio.timeout(10):
        while await store.list_workers():
            await asyncio.sleep(0.02)

    assert await store.remove_worker("w-idle") is False  # removed, not left to expire


async def test_a_worker_that_starts_forgets_the_workers_gone_without_a_word(store: StateStore) -> None:
    long_ago = utcnow() - dt.timedelta(hours=1)
    killed = WorkerPresence(
        name="killed",
        concurrency=4,
        lease_ttl=30,
        started_at=long_ago,
        heartbeat_at=long_ago,
        expires_at=long_ago + dt.timedelta(seconds=90),
    )
    await store.record_worker(killed)
    stop = asyncio.Event()
    job = asyncio.create_task(Worker(store, identity=WorkerIdentity(name="next"), lease_ttl=TTL).run(stop))
    try:
        await recorded(store, "next")
    finally:
        stop.set()
        await asyncio.wait_for(job, 10)

    assert await store.remove_worker("killed") is False  # forgotten as the next worker started

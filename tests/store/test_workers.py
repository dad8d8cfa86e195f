"""The workers' presence: each worker's record of itself, one per name, live until its ``expires_at``.

Every store runs these (memory, SQLite, PostgreSQL). Time moves through the
``now=`` parameter, never by sleeping.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from ratchet.records import WorkerPresence
from ratchet.store import StateStore

from ..helpers.builders import at

TTL = 30.0


def presence(name: str, heard: float, **changes: Any) -> WorkerPresence:
    """The record of worker `name` whose last heartbeat was at ``at(heard)``, live for three TTLs."""
    fields: dict[str, Any] = {
        "name": name,
        "host": "box",
        "pid": 4242,
        "concurrency": 4,
        "lease_ttl": TTL,
        "started_at": at(0),
        "heartbeat_at": at(heard),
        "expires_at": at(heard + 3 * TTL),
    }
    return WorkerPresence(**{**fields, **changes})


async def test_a_recorded_worker_is_listed_as_it_was_recorded(store: StateStore) -> None:
    worker = presence("box:4242", 0, concurrency=7, lease_ttl=12.5)

    await store.record_worker(worker)

    assert await store.list_workers(now=at(1)) == [worker]


async def test_each_heartbeat_replaces_the_workers_record(store: StateStore) -> None:
    await store.record_worker(presence("w1", 0))
    beat = presence("w1", 10, host="other", pid=7, concurrency=2)

    await store.record_worker(beat)

    assert await store.list_workers(now=at(11)) == [beat]


async def test_workers_are_listed_by_name_and_only_while_live(store: StateStore) -> None:
    for name, heard in [("w-b", 0), ("w-a", 50), ("W-c", 100), ("w-é", 20)]:
        await store.record_worker(presence(name, heard))

    # Each is live until three TTLs (90 s) after its last heartbeat, and not at that moment.
    listed = {when: [w.name for w in await store.list_workers(now=at(when))] for when in (60, 90, 110, 140)}

    assert listed == {
        60: ["W-c", "w-a", "w-b", "w-é"],  # by name, as its characters' code points order it
        90: ["W-c", "w-a", "w-é"],
        110: ["W-c", "w-a"],
        140: ["W-c"],
    }


async def test_a_worker_removed_is_not_listed_and_removing_it_again_finds_nothing(store: StateStore) -> None:
    await store.record_worker(presence("w1", 0))
    await store.record_worker(presence("w2", 0))

    assert await store.remove_worker("w1") is True
    assert await store.remove_worker("w1") is False
    assert await store.remove_worker("never-ran") is False
    assert [w.name for w in await store.list_workers(now=at(1))] == ["w2"]


async def test_forgetting_removes_only_the_workers_gone_by_then(store: StateStore) -> None:
    for name, heard in [("gone-1", 0), ("gone-2", 5), ("live", 60)]:
        await store.record_worker(presence(name, heard))

    assert await store.forget_workers(now=at(95)) == 2
    assert await store.forget_workers(now=at(95)) == 0
    # A worker gone and forgotten comes back with its next heartbeat.
    await store.record_worker(presence("gone-1", 96))
    assert [w.name for w in await store.list_workers(now=at(100))] == ["gone-1", "live"]


async def test_a_worker_recorded_in_a_transaction_that_fails_is_not_kept(store: StateStore) -> None:
    await store.record_worker(presence("kept", 0))

    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.record_worker(presence("rolled-back", 0))
            await tx.record_worker(presence("kept", 30, concurrency=1))
            await tx.remove_worker("kept")
            raise RuntimeError("the transaction fails")

    assert await store.list_workers(now=at(1)) == [presence("kept", 0)]


async def test_times_keep_their_microseconds(store: StateStore) -> None:
    heard = at(3) + dt.timedelta(microseconds=123457)
    worker = presence("w1", 0, heartbeat_at=heard, expires_at=heard + dt.timedelta(seconds=90))

    await store.record_worker(worker)

    [listed] = await store.list_workers(now=at(4))
    assert (listed.heartbeat_at, listed.expires_at) == (worker.heartbeat_at, worker.expires_at)

"""Results that ride on a task's next commit (store/ride_along.py), on every store.

A finished operation handed to `StateStore.ride_along` is written first in the
next transaction its lease fences, and commits with it or not at all: a
transaction that fails hands it on to the next one, a lost lease never writes
it, and `flush_riders` commits it on its own.
"""

from __future__ import annotations

import pytest

from ratchet.errors import LeaseLost, StoreURLError
from ratchet.records import Event, OpStatus
from ratchet.store import StateStore, open_store

from ..helpers.builders import make_op
from ..helpers.fences import lapsed_lease, leased_task


async def test_a_rider_commits_with_the_next_fenced_transaction_and_is_told(store: StateStore) -> None:
    task, lease = await leased_task(store)
    await store.record_op_started(make_op(task.id, 0), fence=lease)
    told: list[int] = []
    assert store.ride_along(
        make_op(task.id, 0, OpStatus.SUCCEEDED, output=1), fence=lease, committed=lambda: told.append(0)
    )

    op = await store.get_op(task.id, 0)
    assert op is not None and op.status is OpStatus.STARTED and told == []  # not yet written

    await store.record_op_started(make_op(task.id, 1), fence=lease)  # the next intent carries it

    assert [(op.seq, op.status) for op in await store.list_ops(task.id)] == [
        (0, OpStatus.SUCCEEDED),
        (1, OpStatus.STARTED),
    ]
    assert told == [0]


async def test_one_result_rides_at_a_time(store: StateStore) -> None:
    task, lease = await leased_task(store)
    assert store.ride_along(make_op(task.id, 0, OpStatus.SUCCEEDED, output=0), fence=lease)
    second = make_op(task.id, 1, OpStatus.SUCCEEDED, output=1)
    assert not store.ride_along(second, fence=lease)  # the caller writes it, and the first rides on that

    await store.record_op_finished(second, fence=lease)

    assert [(op.seq, op.status) for op in await store.list_ops(task.id)] == [
        (0, OpStatus.SUCCEEDED),
        (1, OpStatus.SUCCEEDED),
    ]


async def test_a_failed_transaction_hands_its_rider_to_the_next(store: StateStore) -> None:
    task, lease = await leased_task(store)
    assert store.ride_along(make_op(task.id, 0, OpStatus.SUCCEEDED, output=0), fence=lease)

    with pytest.raises(RuntimeError):
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(Event(task_id=task.id, kind="note", message="rolled back"))
            raise RuntimeError("the block failed")
    assert await store.list_ops(task.id) == []  # rolled back with the block

    await store.flush_riders(lease)

    assert [(op.seq, op.status) for op in await store.list_ops(task.id)] == [(0, OpStatus.SUCCEEDED)]


async def test_a_rider_of_a_lost_lease_is_never_written(store: StateStore) -> None:
    task, stale = await lapsed_lease(store)
    assert store.ride_along(make_op(task.id, 0, OpStatus.SUCCEEDED, output=0), fence=stale)
    taken = await store.claim_lease(task.id, "w2", 30)
    assert taken is not None

    with pytest.raises(LeaseLost):
        await store.flush_riders(stale)
    await store.flush_riders(stale)  # nothing rides any more: nothing to write, nothing refused
    await store.record_op_started(make_op(task.id, 1), fence=taken)  # the new holder's write carries none

    assert [op.seq for op in await store.list_ops(task.id)] == [1]


@pytest.mark.parametrize("value", ["yes", ""])
async def test_ride_along_on_the_url_takes_on_or_off(url: str, value: str) -> None:
    with pytest.raises(StoreURLError, match="ride_along must be 'on' or 'off'"):
        await open_store(url + ("&" if "?" in url else "?") + f"ride_along={value}")


async def test_results_ride_along_only_when_the_url_says_so(url: str) -> None:
    for suffix, riding in (("", False), ("ride_along=on", True), ("ride_along=off", False)):
        joined = url + ("&" if "?" in url else "?") + suffix if suffix else url
        store = await open_store(joined)
        try:
            assert store.results_ride_along is riding
        finally:
            await store.close()

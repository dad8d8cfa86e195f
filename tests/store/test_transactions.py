"""Transactions (several writes commit together or not at all) and lease fencing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ratchet.errors import DuplicateRecord, LeaseLost, StoreError
from ratchet.records import Lease, Task, TaskStatus
from ratchet.store import StateStore, open_store

from ..helpers.builders import make_event, make_op, make_task
from ..helpers.stores import STORE_URLS


class Boom(Exception):
    """Raised inside a transaction block to make it roll back."""


async def _claim(store: StateStore, task: Task, owner: str, **options: Any) -> Lease:
    lease = await store.claim_lease(task.id, owner, 60, **options)
    assert lease is not None
    return lease


async def _stale_and_current(store: StateStore, task: Task) -> tuple[Lease, Lease]:
    stale = await _claim(store, task, "w1")
    current = await _claim(store, task, "w2", take_over=True)
    return stale, current


async def test_writes_in_a_transaction_commit_together(store: StateStore, task: Task) -> None:
    async with store.transaction() as tx:
        await tx.update_task(task.transition(TaskStatus.RUNNING))
        await tx.append_event(make_event(task.id, "started"))
        assert (await tx.get_task(task.id)).status is TaskStatus.RUNNING
    assert (await store.get_task(task.id)).status is TaskStatus.RUNNING
    assert [e.message for e in await store.list_events(task.id)] == ["started"]


async def test_an_exception_rolls_every_write_back(store: StateStore, task: Task) -> None:
    with pytest.raises(Boom):
        async with store.transaction() as tx:
            await tx.update_task(task.transition(TaskStatus.RUNNING))
            await tx.append_event(make_event(task.id, "started"))
            await tx.record_op_started(make_op(task.id, 0))
            raise Boom
    assert await store.get_task(task.id) == task
    assert await store.list_events(task.id) == []
    assert await store.get_op(task.id, 0) is None
    assert (await store.append_event(make_event(task.id, "after"))).seq == 1


async def test_a_failing_store_op_rolls_earlier_writes_back(store: StateStore, task: Task) -> None:
    with pytest.raises(DuplicateRecord):
        async with store.transaction() as tx:
            await tx.create_task(make_task("t2"))
            await tx.append_event(make_event(task.id, "created t2"))
            await tx.create_task(make_task(task.id))
    assert [t.id for t in await store.list_tasks()] == [task.id]
    assert await store.list_events(task.id) == []


async def test_rolled_back_transaction_leaves_store_usable(store: StateStore, task: Task) -> None:
    with pytest.raises(Boom):
        async with store.transaction() as tx:
            await tx.append_event(make_event(task.id, "lost"))
            raise Boom
    async with store.transaction() as tx:
        await tx.append_event(make_event(task.id, "kept"))
    assert [(e.seq, e.message) for e in await store.list_events(task.id)] == [(1, "kept")]


async def test_reading_gives_the_committed_state(store: StateStore, task: Task) -> None:
    await store.append_event(make_event(task.id))
    async with store.reading() as ops:
        assert await ops.get_task(task.id) == task
        assert len(await ops.list_events(task.id)) == 1


# ------------------------------------------------------------------ fencing


async def test_transaction_fenced_by_the_current_lease_commits(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1")
    async with store.transaction(fence=lease) as tx:
        await tx.update_task(task.transition(TaskStatus.RUNNING))
        await tx.append_event(make_event(task.id, "started"))
    assert (await store.get_task(task.id)).status is TaskStatus.RUNNING
    assert len(await store.list_events(task.id)) == 1


async def test_transaction_fenced_by_a_stale_lease_writes_nothing(store: StateStore, task: Task) -> None:
    stale, current = await _stale_and_current(store, task)
    past_first_write = False
    # Raised on entering (SQLite, memory) or by the first statement, which carries the fence (PostgreSQL).
    with pytest.raises(
        LeaseLost, match=f"lease {stale.token} of {stale.owner} on task {task.id} is no longer current"
    ):
        async with store.transaction(fence=stale) as tx:
            await tx.update_task(task.transition(TaskStatus.RUNNING))
            past_first_write = True
            await tx.append_event(make_event(task.id, "started"))
    assert not past_first_write
    assert await store.get_task(task.id) == task
    assert await store.list_events(task.id) == []
    assert await store.get_lease(task.id) == current


async def test_transaction_fenced_by_a_released_lease_raises(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1")
    await store.release_lease(lease)
    with pytest.raises(LeaseLost):
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(make_event(task.id))
    assert await store.list_events(task.id) == []


async def test_fenced_single_write_with_current_lease(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1")
    running = await store.update_task(task.transition(TaskStatus.RUNNING), fence=lease)
    event = await store.append_event(make_event(task.id), fence=lease)
    assert await store.get_task(task.id) == running
    assert await store.list_events(task.id) == [event]


async def test_fenced_single_write_with_stale_lease_raises(store: StateStore, task: Task) -> None:
    stale, current = await _stale_and_current(store, task)
    with pytest.raises(LeaseLost):
        await store.update_task(task.transition(TaskStatus.RUNNING), fence=stale)
    with pytest.raises(LeaseLost):
        await store.append_event(make_event(task.id), fence=stale)
    with pytest.raises(LeaseLost):
        await store.record_op_started(make_op(task.id, 0), fence=stale)
    assert await store.get_task(task.id) == task
    assert await store.list_events(task.id) == []
    assert await store.get_op(task.id, 0) is None
    await store.append_event(make_event(task.id), fence=current)
    assert len(await store.list_events(task.id)) == 1


async def test_fence_of_one_task_does_not_block_another(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    await _claim(store, task, "w1")
    theirs = await _claim(store, other, "w2")
    event = await store.append_event(make_event(other.id), fence=theirs)
    assert await store.list_events(other.id) == [event]


async def test_calling_the_store_inside_its_own_transaction_is_an_error_not_a_hang(
    store: StateStore, task: Task
) -> None:
    with pytest.raises(StoreError, match="inside one of its own transactions"):
        async with store.transaction() as tx:
            await tx.append_event(make_event(task.id, "inside"))
            await asyncio.wait_for(store.append_event(make_event(task.id, "nested")), timeout=5)
    assert await store.list_events(task.id) == []
    await store.append_event(make_event(task.id, "after"))
    assert [e.message for e in await store.list_events(task.id)] == ["after"]


async def test_a_closed_store_refuses_use(tmp_path: Path) -> None:
    for url in STORE_URLS.values():
        closed = await open_store(url(tmp_path))
        await closed.close()
        with pytest.raises(StoreError):
            await closed.list_tasks()

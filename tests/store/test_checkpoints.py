"""Checkpoints: numbered per task, rotated by count and age."""

from __future__ import annotations

import datetime as dt

import pytest

from ratchet.errors import CheckpointNotFound
from ratchet.records import AgentState, Fact, Task
from ratchet.store import StateStore

from ..helpers.builders import at, make_checkpoint, make_task

DAY = 24 * 3600


async def _put_many(store: StateStore, task: Task, ages_in_days: list[float]) -> None:
    """Store one checkpoint per age, oldest first, created that many days before `at(0)`."""
    for age in ages_in_days:
        await store.put_checkpoint(make_checkpoint(task, created_at=at(-age * DAY)))


async def _numbers(store: StateStore, task_id: str) -> list[int]:
    return [c.number for c in await store.list_checkpoints(task_id)]


async def test_numbers_count_from_one_per_task(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    first = await store.put_checkpoint(make_checkpoint(task))
    theirs = await store.put_checkpoint(make_checkpoint(other))
    second = await store.put_checkpoint(make_checkpoint(task, last_seq=4))
    assert (first.number, second.number, theirs.number) == (1, 2, 1)


async def test_checkpoint_is_stored_as_returned(store: StateStore, task: Task) -> None:
    state = AgentState(goal="g", plan=["a", "b"], known_facts=[Fact(key="k", value=[1, "x"])])
    checkpoint = make_checkpoint(task, last_seq=7, message_cursor=3, state=state)
    stored = await store.put_checkpoint(checkpoint)
    assert stored == checkpoint.model_copy(update={"number": 1})
    assert await store.get_checkpoint(task.id, 1) == stored


async def test_latest_checkpoint_is_the_newest(store: StateStore, task: Task) -> None:
    assert await store.latest_checkpoint(task.id) is None
    for seq in range(3):
        await store.put_checkpoint(make_checkpoint(task, last_seq=seq))
    latest = await store.latest_checkpoint(task.id)
    assert latest is not None and (latest.number, latest.last_seq) == (3, 2)


async def test_get_unknown_checkpoint_raises(store: StateStore, task: Task) -> None:
    await store.put_checkpoint(make_checkpoint(task))
    with pytest.raises(CheckpointNotFound):
        await store.get_checkpoint(task.id, 2)
    with pytest.raises(CheckpointNotFound):
        await store.get_checkpoint("ghost", 1)


async def test_list_checkpoints_oldest_first(store: StateStore, task: Task) -> None:
    stored = [await store.put_checkpoint(make_checkpoint(task, last_seq=s)) for s in range(3)]
    assert await store.list_checkpoints(task.id) == stored
    assert await store.list_checkpoints("ghost") == []


async def test_rotate_keeps_the_newest_n(store: StateStore, task: Task) -> None:
    await _put_many(store, task, [0, 0, 0, 0, 0])
    assert await store.rotate_checkpoints(keep=2) == 3
    assert await _numbers(store, task.id) == [4, 5]


async def test_numbers_keep_growing_after_rotation(store: StateStore, task: Task) -> None:
    await _put_many(store, task, [0, 0, 0])
    await store.rotate_checkpoints(keep=1)
    assert (await store.put_checkpoint(make_checkpoint(task))).number == 4


async def test_rotate_drops_those_older_than(store: StateStore, task: Task) -> None:
    await _put_many(store, task, [10, 5, 1])
    deleted = await store.rotate_checkpoints(older_than=dt.timedelta(days=3), now=at(0))
    assert deleted == 2
    assert await _numbers(store, task.id) == [3]


async def test_rotate_always_keeps_the_newest(store: StateStore, task: Task) -> None:
    await _put_many(store, task, [10, 9, 8])
    deleted = await store.rotate_checkpoints(older_than=dt.timedelta(days=1), now=at(0))
    assert deleted == 2
    assert await _numbers(store, task.id) == [3]


async def test_rotate_keep_zero_still_keeps_the_newest(store: StateStore, task: Task) -> None:
    await _put_many(store, task, [0, 0, 0])
    assert await store.rotate_checkpoints(keep=0) == 2
    assert await _numbers(store, task.id) == [3]


async def test_rotate_applies_per_task(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    await _put_many(store, task, [0, 0, 0])
    await _put_many(store, other, [0, 0])
    assert await store.rotate_checkpoints(keep=1) == 3
    assert await _numbers(store, task.id) == [3]
    assert await _numbers(store, other.id) == [2]


async def test_rotate_of_one_task_leaves_others(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    await _put_many(store, task, [0, 0, 0])
    await _put_many(store, other, [0, 0, 0])
    assert await store.rotate_checkpoints(keep=1, task_id=task.id) == 2
    assert await _numbers(store, task.id) == [3]
    assert await _numbers(store, other.id) == [1, 2, 3]


async def test_rotate_with_nothing_to_drop(store: StateStore, task: Task) -> None:
    await _put_many(store, task, [2, 1])
    assert await store.rotate_checkpoints(keep=5) == 0
    assert await store.rotate_checkpoints(older_than=dt.timedelta(days=30), now=at(0)) == 0
    assert await _numbers(store, task.id) == [1, 2]

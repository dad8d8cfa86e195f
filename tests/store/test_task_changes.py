"""The task-change log: every task created and every move of its status, in one gapless order."""

from __future__ import annotations

import asyncio

import pytest

from ratchet.records import Task, TaskChange, TaskChangeKind, TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.builders import make_task


def _summary(changes: list[TaskChange]) -> list[tuple[int, str, str, str]]:
    return [(c.position, c.kind, c.task_id, c.status_text) for c in changes]


async def test_creation_and_status_moves_are_logged_in_order(store: StateStore) -> None:
    assert await store.last_task_change() == 0
    task = await store.create_task(make_task("t1", agent="ops"))
    running = await store.update_task(task.transition(TaskStatus.RUNNING))
    await store.update_task(running.model_copy(update={"goal": "same status"}))  # not a status move
    waiting = await store.update_task(running.transition(TaskStatus.WAITING, waiting_on=WaitReason.APPROVAL))
    await store.update_task(waiting.transition(TaskStatus.WAITING, waiting_on=WaitReason.INPUT))
    await store.create_task(make_task("t2"))

    changes = await store.list_task_changes()
    assert _summary(changes) == [
        (1, "created", "t1", "queued"),
        (2, "status", "t1", "running"),
        (3, "status", "t1", "waiting(approval)"),
        (4, "status", "t1", "waiting(input)"),
        (5, "created", "t2", "queued"),
    ]
    assert (changes[0].name, changes[0].agent) == ("task t1", "ops")
    assert await store.last_task_change() == 5
    after_three = await store.list_task_changes(after=3, limit=1)
    assert _summary(after_three) == [(4, "status", "t1", "waiting(input)")]
    assert await store.list_task_changes(after=5) == []


async def test_a_rolled_back_change_leaves_no_trace_and_no_gap(store: StateStore) -> None:
    await store.create_task(make_task("t1"))
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.create_task(make_task("gone"))
            raise RuntimeError("changed my mind")
    await store.create_task(make_task("t2"))
    assert [(c.position, c.task_id) for c in await store.list_task_changes()] == [(1, "t1"), (2, "t2")]
    assert [c.kind for c in await store.list_task_changes()] == [TaskChangeKind.CREATED] * 2


async def test_a_reader_following_concurrent_writers_sees_each_change_once(store: StateStore) -> None:
    count = 30
    seen: list[int] = []
    done = asyncio.Event()

    async def create(number: int) -> Task:
        task = await store.create_task(make_task(f"t{number}"))
        return await store.update_task(task.transition(TaskStatus.RUNNING))

    async def follow() -> None:
        while not done.is_set() or len(seen) < 2 * count:
            for change in await store.list_task_changes(after=seen[-1] if seen else 0):
                seen.append(change.position)
            await asyncio.sleep(0)

    reader = asyncio.create_task(follow())
    await asyncio.gather(*(create(n) for n in range(count)))
    done.set()
    await asyncio.wait_for(reader, 30)
    assert seen == list(range(1, 2 * count + 1))

"""A task's children (``Task.parent_id``), and the locked read a child's end takes of its parent."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from ratchet.errors import TaskNotFound
from ratchet.records import Task, TaskStatus, Trigger, WaitReason
from ratchet.store import StateStore

from ..helpers.builders import make_task


async def test_list_children_gives_a_tasks_children_oldest_first(store: StateStore, task: Task) -> None:
    second = await store.create_task(make_task("t1.2", parent_id=task.id))
    first = await store.create_task(make_task("t1.1", parent_id=task.id))
    await store.create_task(make_task("other"))
    await store.create_task(make_task("grandchild", parent_id=first.id))

    assert [c.id for c in await store.list_children(task.id)] == [second.id, first.id]
    assert [c.id for c in await store.list_children(first.id)] == ["grandchild"]
    assert await store.list_children("other") == []
    assert (await store.get_task(first.id)).parent_id == task.id


async def test_a_childs_parent_survives_its_updates(store: StateStore, task: Task) -> None:
    child = await store.create_task(make_task("c", parent_id=task.id))
    await store.update_task(child.transition(TaskStatus.RUNNING))

    assert [c.status for c in await store.list_children(task.id)] == [TaskStatus.RUNNING]


async def test_get_task_locked_reads_the_task_and_holds_off_another_locked_read(
    store: StateStore, task: Task
) -> None:
    order: list[str] = []

    async def second() -> None:
        async with store.transaction() as tx:
            await tx.get_task_locked(task.id)
            order.append("second")

    async with store.transaction() as tx:
        assert await tx.get_task_locked(task.id) == task
        # A context of its own: it is another writer, not a call inside this transaction.
        other = asyncio.create_task(second(), context=contextvars.Context())
        await asyncio.sleep(0.3)
        order.append("first ends")
    await other

    assert order == ["first ends", "second"]


async def test_get_task_locked_of_an_unknown_task_raises(store: StateStore) -> None:
    with pytest.raises(TaskNotFound):
        await store.get_task_locked("nope")


async def test_a_parent_waiting_on_children_is_an_orphan_only_once_they_all_ended(
    store: StateStore, task: Task
) -> None:
    parent = await store.update_task(task.transition(TaskStatus.RUNNING))
    parent = await store.update_task(parent.transition(TaskStatus.WAITING, waiting_on=WaitReason.CHILDREN))
    first = await store.create_task(make_task("t1.0", parent_id=task.id))
    second = await store.create_task(make_task("t1.1", parent_id=task.id))
    await store.update_task(first.transition(TaskStatus.CANCELLED))
    await store.put_trigger(Trigger(kind="start", task_id=second.id))
    second = await store.update_task(second.transition(TaskStatus.RUNNING))

    assert task.id not in [t.id for t in await store.list_orphaned_tasks()]  # a child still runs

    await store.update_task(second.transition(TaskStatus.COMPLETED))
    await store.delete_triggers(second.id)

    # Its wake-up was lost (a worker died between taking it and claiming the task): a sweep finds it.
    assert [t.id for t in await store.list_orphaned_tasks()] == [task.id]
    leases = await store.claim_tasks("w", 30)
    assert [lease.task_id for lease in leases] == [task.id]

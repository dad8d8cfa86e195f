"""Inboxes: messages sent to a task, numbered in arrival order, each taken once, oldest first."""

from __future__ import annotations

import pytest

from ratchet.errors import TaskNotFound
from ratchet.records import InboxMessage, Task
from ratchet.store import StateStore


def _message(task_id: str, name: str, payload: object = None) -> InboxMessage:
    return InboxMessage.model_validate({"task_id": task_id, "name": name, "payload": payload})


async def test_sent_messages_are_numbered_per_task_in_arrival_order(store: StateStore, task: Task) -> None:
    sent = [await store.send_message(_message(task.id, name, n)) for n, name in enumerate(["a", "b", "a"])]

    assert [(m.seq, m.name, m.payload, m.taken_by) for m in sent] == [
        (1, "a", 0, None),
        (2, "b", 1, None),
        (3, "a", 2, None),
    ]
    assert await store.list_inbox(task.id) == sent


async def test_a_take_gives_the_oldest_pending_message_of_its_name_once(
    store: StateStore, task: Task
) -> None:
    for n, name in enumerate(["a", "b", "a", "a"]):
        await store.send_message(_message(task.id, name, {"n": n}))

    first = await store.take_messages(task.id, "a", taken_by=7)
    rest = await store.take_messages(task.id, "a", taken_by=9, limit=None)
    none_left = await store.take_messages(task.id, "a", taken_by=11)

    assert [(m.seq, m.payload, m.taken_by) for m in first] == [(1, {"n": 0}, 7)]
    assert [(m.seq, m.taken_by) for m in rest] == [(3, 9), (4, 9)]
    assert none_left == []
    assert all(m.taken_at is not None for m in [*first, *rest])
    assert [m.seq for m in await store.list_inbox(task.id, pending_only=True)] == [2]
    assert [m.taken_by for m in await store.list_inbox(task.id)] == [7, None, 9, 9]


async def test_a_take_rolled_back_leaves_the_message_pending(store: StateStore, task: Task) -> None:
    await store.send_message(_message(task.id, "a", "kept"))

    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            assert len(await tx.take_messages(task.id, "a", taken_by=1)) == 1
            raise RuntimeError("the journal write failed")

    assert [m.payload for m in await store.list_inbox(task.id, pending_only=True)] == ["kept"]


async def test_no_task_no_inbox(store: StateStore) -> None:
    with pytest.raises(TaskNotFound):
        await store.send_message(_message("nobody", "a"))
    with pytest.raises(TaskNotFound):
        await store.take_messages("nobody", "a", taken_by=0)
    assert await store.list_inbox("nobody") == []

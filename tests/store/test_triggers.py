"""Triggers: a durable queue of wake-ups, claimed when due."""

from __future__ import annotations

import datetime as dt

from ratchet.records import Task, utcnow
from ratchet.store import StateStore

from ..helpers.builders import at, make_task, make_trigger


async def test_put_trigger_assigns_distinct_ids(store: StateStore, task: Task) -> None:
    first = await store.put_trigger(make_trigger(task_id=task.id, kind="start", payload={"n": 1}))
    second = await store.put_trigger(make_trigger(task_id=task.id, kind="wake", payload={"n": 2}))
    assert first.id > 0 and second.id > 0 and first.id != second.id
    assert first == make_trigger(task_id=task.id, kind="start", payload={"n": 1}, id=first.id, priority=5)
    assert await store.list_triggers(task.id) == [first, second]


async def test_triggers_of_one_task_and_kind_coalesce_to_the_earliest(store: StateStore, task: Task) -> None:
    queued = await store.put_trigger(
        make_trigger(at(60), task_id=task.id, kind="wake", priority=5, payload={"n": 1})
    )
    later = await store.put_trigger(
        make_trigger(at(90), task_id=task.id, kind="wake", priority=1, payload={"n": 2})
    )
    assert later == queued.model_copy(update={"priority": 1})
    sooner = await store.put_trigger(
        make_trigger(at(30), task_id=task.id, kind="wake", priority=9, dedupe_key="x")
    )
    assert sooner == queued.model_copy(update={"fire_at": at(30), "priority": 1})
    assert await store.list_triggers() == [sooner]
    assert await store.claim_due_triggers(now=at(30)) == [sooner]
    assert await store.list_triggers() == []


async def test_triggers_of_other_tasks_or_kinds_do_not_coalesce(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    puts = [(task.id, "wake"), (task.id, "start"), (other.id, "wake")]
    stored = [await store.put_trigger(make_trigger(task_id=t, kind=k)) for t, k in puts]
    assert len({trigger.id for trigger in stored}) == 3
    assert len(await store.list_triggers()) == 3


async def test_queued_dedupe_key_returns_the_queued_trigger(store: StateStore) -> None:
    queued = await store.put_trigger(make_trigger(kind="schedule", dedupe_key="start:t1"))
    again = await store.put_trigger(
        make_trigger(at(-60), kind="schedule", dedupe_key="start:t1", payload={"late": True})
    )
    assert again == queued
    assert await store.list_triggers() == [queued]


async def test_next_due_at_is_the_earliest_fire_time(store: StateStore, task: Task) -> None:
    assert await store.next_due_at() is None
    await store.put_trigger(make_trigger(at(50), kind="a"))
    await store.put_trigger(make_trigger(at(20), task_id=task.id, kind="b"))
    assert await store.next_due_at() == at(20)
    await store.claim_due_triggers(now=at(20))
    assert await store.next_due_at() == at(50)


async def test_dedupe_key_is_free_again_once_claimed(store: StateStore, task: Task) -> None:
    queued = await store.put_trigger(make_trigger(task_id=task.id, dedupe_key="k"))
    assert await store.claim_due_triggers(now=at(1)) == [queued]
    requeued = await store.put_trigger(make_trigger(task_id=task.id, dedupe_key="k"))
    assert requeued.id != queued.id
    assert await store.list_triggers() == [requeued]


async def test_claim_order_is_priority_then_fire_at_then_id_among_due(store: StateStore, task: Task) -> None:
    async def put(name: str, seconds: float, priority: int) -> None:
        await store.put_trigger(
            make_trigger(at(seconds), priority=priority, task_id=task.id, kind=name, payload={"name": name})
        )

    await put("late", 2, 0)
    await put("low", 1, 9)
    await put("first_id", 1, 1)
    await put("second_id", 1, 1)
    await put("future", 100, 0)

    claimed = await store.claim_due_triggers(now=at(10))
    assert [t.payload["name"] for t in claimed] == ["late", "first_id", "second_id", "low"]
    assert [t.payload["name"] for t in await store.list_triggers()] == ["future"]


async def test_an_urgent_trigger_due_later_waits_for_its_time(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    urgent = await store.put_trigger(make_trigger(at(20), task_id=task.id, priority=0))
    routine = await store.put_trigger(make_trigger(at(10), task_id=other.id, priority=9))
    assert await store.claim_due_triggers(limit=1, now=at(15)) == [routine]
    assert await store.claim_due_triggers(now=at(20)) == [urgent]


async def test_a_claim_of_one_takes_the_most_urgent_due_trigger(store: StateStore) -> None:
    tasks = [await store.create_task(make_task(name)) for name in ("low", "high", "mid")]
    for task, priority in zip(tasks, (9, 0, 5), strict=True):
        await store.put_trigger(make_trigger(at(len(task.id)), task_id=task.id, priority=priority))
    taken = [(await store.claim_due_triggers(limit=1, now=at(60)))[0].task_id for _ in tasks]
    assert taken == ["high", "mid", "low"]


async def test_a_trigger_without_priority_takes_its_tasks(store: StateStore) -> None:
    urgent = await store.create_task(make_task("urgent", priority=1))
    plain = await store.create_task(make_task("plain"))
    woken = await store.put_trigger(make_trigger(task_id=urgent.id, kind="wake"))
    assert woken.priority == 1
    assert (await store.put_trigger(make_trigger(task_id=plain.id, kind="wake"))).priority == 5
    assert (await store.put_trigger(make_trigger(kind="schedule", dedupe_key="s"))).priority == 5
    given = await store.put_trigger(make_trigger(task_id=urgent.id, kind="other", priority=7))
    assert given.priority == 7
    assert await store.list_triggers(urgent.id) == [woken, given]


async def test_trigger_due_exactly_now_is_claimed(store: StateStore) -> None:
    due = await store.put_trigger(make_trigger(at(5)))
    assert await store.claim_due_triggers(now=at(4)) == []
    assert await store.claim_due_triggers(now=at(5)) == [due]


async def test_claim_without_now_uses_the_clock(store: StateStore) -> None:
    past = await store.put_trigger(make_trigger(utcnow() - dt.timedelta(minutes=1)))
    future = await store.put_trigger(make_trigger(utcnow() + dt.timedelta(hours=1)))
    assert await store.claim_due_triggers() == [past]
    assert await store.list_triggers() == [future]


async def test_claimed_triggers_leave_the_queue(store: StateStore) -> None:
    for seconds in range(5):
        await store.put_trigger(make_trigger(at(seconds)))
    first = await store.claim_due_triggers(limit=3, now=at(10))
    rest = await store.claim_due_triggers(limit=3, now=at(10))
    assert [t.fire_at for t in first] == [at(0), at(1), at(2)]
    assert [t.fire_at for t in rest] == [at(3), at(4)]
    assert await store.claim_due_triggers(now=at(10)) == []
    assert await store.list_triggers() == []


async def test_list_triggers_of_a_task_in_claim_order(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    later = await store.put_trigger(make_trigger(at(2), task_id=task.id))
    theirs = await store.put_trigger(make_trigger(at(0), task_id=other.id))
    sooner = await store.put_trigger(make_trigger(at(1), task_id=task.id, kind="retry"))
    session = await store.put_trigger(make_trigger(at(3), session_id="s1", kind="wake"))
    assert await store.list_triggers(task.id) == [sooner, later]
    assert await store.list_triggers() == [theirs, sooner, later, session]


async def test_delete_triggers_of_a_task(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    for seconds, kind in enumerate(["start", "wake", "retry"]):
        await store.put_trigger(make_trigger(at(seconds), task_id=task.id, kind=kind))
    theirs = await store.put_trigger(make_trigger(at(0), task_id=other.id))
    assert await store.delete_triggers(task.id) == 3
    assert await store.list_triggers() == [theirs]
    assert await store.delete_triggers(task.id) == 0


async def test_delete_one_trigger(store: StateStore, task: Task) -> None:
    doomed = await store.put_trigger(make_trigger(kind="schedule", dedupe_key="s1"))
    kept = await store.put_trigger(make_trigger(task_id=task.id))
    assert await store.delete_trigger(doomed.id) is True
    assert await store.delete_trigger(doomed.id) is False
    assert await store.list_triggers() == [kept]


async def test_update_trigger_moves_its_time_and_payload_only(store: StateStore, task: Task) -> None:
    queued = await store.put_trigger(make_trigger(at(60), kind="schedule", dedupe_key="s1", priority=3))
    other = await store.put_trigger(make_trigger(at(10), task_id=task.id))
    moved = queued.model_copy(update={"fire_at": at(5), "payload": {"paused": True}, "priority": 9})
    assert await store.update_trigger(moved) is True
    assert await store.list_triggers() == [moved.model_copy(update={"priority": 3}), other]
    assert await store.claim_due_triggers(now=at(5), limit=1) == [moved.model_copy(update={"priority": 3})]
    assert await store.update_trigger(moved) is False
    assert await store.list_triggers() == [other]

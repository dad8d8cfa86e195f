"""What workers claim: orphaned tasks, in one step with their leases; and the change feed that wakes them."""

from __future__ import annotations

import asyncio

from ratchet.records import Lease, Task, TaskStatus, WaitReason
from ratchet.store import StateStore
from ratchet.store.changes import TRIGGERS, events_topic

from ..helpers.builders import at, make_event, make_task, make_trigger

TTL = 30.0
SPACE = "boot/pid:[1]"  # a PID space, as a worker records it


async def _tasks(store: StateStore, count: int) -> list[Task]:
    return [await store.create_task(make_task(f"t{i}")) for i in range(count)]


async def test_orphaned_tasks_are_those_nothing_will_wake(store: StateStore) -> None:
    queued, held, expired, released, triggered, waiting = await _tasks(store, 6)
    await store.claim_lease(held.id, "w", TTL, now=at(0))
    await store.claim_lease(expired.id, "w", TTL, now=at(-100))
    lease = await store.claim_lease(released.id, "w", TTL, now=at(0))
    assert lease is not None
    await store.release_lease(lease, now=at(1))
    await store.put_trigger(make_trigger(at(1000), task_id=triggered.id))
    running = waiting.transition(TaskStatus.RUNNING)
    await store.update_task(running)
    await store.update_task(running.transition(TaskStatus.WAITING, waiting_on=WaitReason.APPROVAL))

    orphans = await store.list_orphaned_tasks(now=at(5))
    assert [task.id for task in orphans] == [queued.id, expired.id, released.id]


async def test_held_orphans_are_the_orphans_but_for_a_live_lease_of_one_host_and_pid_space(
    store: StateStore,
) -> None:
    held, elsewhere, other_space, expired, released, triggered, waiting, ended = await _tasks(store, 8)

    async def hold(task: Task, seconds: float = 0, host: str = "box", pid_space: str = SPACE) -> Lease:
        lease = await store.claim_lease(
            task.id, "w", TTL, host=host, pid=7, pid_space=pid_space, pid_started=99, now=at(seconds)
        )
        assert lease is not None
        return lease

    mine = await hold(held)
    await hold(elsewhere, host="other")
    await hold(other_space, pid_space="boot/pid:[2]")
    await hold(expired, -100)
    await store.release_lease(await hold(released), now=at(1))
    await hold(triggered)
    await store.put_trigger(make_trigger(at(1000), task_id=triggered.id))
    await hold(waiting)
    running = waiting.transition(TaskStatus.RUNNING)
    await store.update_task(running)
    await store.update_task(running.transition(TaskStatus.WAITING, waiting_on=WaitReason.APPROVAL))
    await hold(ended)
    started = await store.update_task(ended.transition(TaskStatus.RUNNING))
    await store.update_task(started.transition(TaskStatus.COMPLETED))

    assert await store.held_orphans("box", SPACE, now=at(5)) == [mine]
    assert (mine.pid, mine.pid_space, mine.pid_started) == (7, SPACE, 99)
    assert await store.held_orphans("box", SPACE, now=at(TTL)) == []  # expired by then: an orphan


async def test_claim_tasks_leases_orphans_oldest_first(store: StateStore) -> None:
    tasks = await _tasks(store, 5)
    await store.claim_lease(tasks[1].id, "other", TTL, now=at(0))

    leases = await store.claim_tasks(
        "w1", TTL, host="box", pid=7, pid_space="boot/pid:[1]", pid_started=99, limit=3, now=at(1)
    )
    assert [lease.task_id for lease in leases] == [tasks[0].id, tasks[2].id, tasks[3].id]
    holder = ("w1", "box", 7, "boot/pid:[1]", 99)
    assert all(
        (lease.owner, lease.host, lease.pid, lease.pid_space, lease.pid_started) == holder for lease in leases
    )
    assert [claim.pid_space for claim in await store.lease_history(tasks[0].id)] == ["boot/pid:[1]"]
    assert all(lease.expires_at == at(1 + TTL) and lease.granted_at == at(1) for lease in leases)
    assert await store.get_lease(tasks[2].id) == leases[1]

    rest = await store.claim_tasks("w2", TTL, now=at(2))
    assert [lease.task_id for lease in rest] == [tasks[4].id]
    assert await store.claim_tasks("w3", TTL, now=at(3)) == []


async def test_orphans_are_claimed_most_urgent_first_then_oldest(store: StateStore) -> None:
    for name, priority in (("old", 5), ("low", 9), ("urgent", 1), ("new", 5)):
        await store.create_task(make_task(name, priority=priority))
    assert [t.id for t in await store.list_orphaned_tasks(now=at(0))] == ["urgent", "old", "new", "low"]
    first = await store.claim_tasks("w1", TTL, limit=1, now=at(0))
    rest = await store.claim_tasks("w1", TTL, now=at(0))
    assert [lease.task_id for lease in first + rest] == ["urgent", "old", "new", "low"]


async def test_claim_tasks_leaves_out_what_it_is_told_to_skip(store: StateStore) -> None:
    tasks = await _tasks(store, 3)
    leases = await store.claim_tasks("w1", TTL, limit=2, skip={tasks[0].id}, now=at(0))
    assert [lease.task_id for lease in leases] == [tasks[1].id, tasks[2].id]


async def test_claimers_at_once_never_get_the_same_task(store: StateStore) -> None:
    await _tasks(store, 12)

    async def claimer(name: str) -> list[str]:
        got: list[str] = []
        while leases := await store.claim_tasks(name, TTL, limit=2, now=at(0)):
            got.extend(lease.task_id for lease in leases)
            await asyncio.sleep(0)
        return got

    claims = await asyncio.gather(*(claimer(f"w{i}") for i in range(4)))
    everything = [task_id for got in claims for task_id in got]
    assert sorted(everything) == sorted(f"t{i}" for i in range(12))


async def test_change_feed_hears_committed_triggers_and_events(store: StateStore) -> None:
    task = await store.create_task(make_task("t1"))
    async with store.changes(TRIGGERS) as work, store.changes(events_topic(task.id)) as events:
        await store.put_trigger(make_trigger(task_id=task.id))
        assert await work.wait(5)
        await store.append_event(make_event(task.id))
        assert await events.wait(5)


async def test_change_feed_keeps_a_change_made_before_the_wait(store: StateStore) -> None:
    task = await store.create_task(make_task("t1"))
    async with store.changes(events_topic(task.id)) as feed:
        await store.append_event(make_event(task.id))
        await asyncio.sleep(0.05)
        assert await feed.wait(5)


async def test_change_feed_ignores_rolled_back_writes_and_other_topics(store: StateStore) -> None:
    task = await store.create_task(make_task("t1"))
    async with store.changes(events_topic("someone-else")) as feed:
        await store.append_event(make_event(task.id))
        try:
            async with store.transaction() as tx:
                await tx.append_event(make_event("someone-else"))
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        assert not await feed.wait(0.3)

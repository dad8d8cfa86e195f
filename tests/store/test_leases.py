"""Leases: a worker's claim on a task, with a token that only grows.

Time moves through the ``now=`` parameter, never by sleeping.
"""

from __future__ import annotations

from typing import Any

import pytest

from ratchet.errors import LeaseLost
from ratchet.records import Lease, Task
from ratchet.store import StateStore

from ..helpers.builders import at, make_task

TTL = 30.0


async def _claim(store: StateStore, task: Task, owner: str, seconds: float, **options: Any) -> Lease:
    """Claim the task for `owner` at ``at(seconds)``, asserting the claim succeeds."""
    lease = await store.claim_lease(task.id, owner, TTL, now=at(seconds), **options)
    assert lease is not None, f"{owner} could not claim {task.id} at +{seconds}s"
    return lease


async def test_claim_grants_token_one(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1", 0, host="box", pid=42)
    assert (lease.task_id, lease.owner, lease.token) == (task.id, "w1", 1)
    assert (lease.host, lease.pid, lease.released) == ("box", 42, False)
    assert (lease.pid_space, lease.pid_started) == ("", 0)  # not given: unknown
    assert lease.expires_at == at(TTL)
    assert await store.get_lease(task.id) == lease


async def test_a_claim_keeps_which_process_holds_it(store: StateStore, task: Task) -> None:
    first = await _claim(store, task, "w1", 0, host="box", pid=42, pid_space="boot/pid:[1]", pid_started=5)
    taken = await _claim(store, task, "w2", 1, host="box", pid=43, pid_space="boot/pid:[2]", take_over=True)

    assert (first.pid_space, first.pid_started) == ("boot/pid:[1]", 5)
    assert (taken.pid_space, taken.pid_started) == ("boot/pid:[2]", 0)
    assert await store.get_lease(task.id) == taken
    history = await store.lease_history(task.id)
    assert [(claim.pid, claim.pid_space, claim.pid_started) for claim in history] == [
        (42, "boot/pid:[1]", 5),
        (43, "boot/pid:[2]", 0),
    ]


async def test_get_lease_of_unclaimed_task_is_none(store: StateStore, task: Task) -> None:
    assert await store.get_lease(task.id) is None
    assert await store.lease_history(task.id) == []


async def test_live_lease_blocks_another_owner(store: StateStore, task: Task) -> None:
    held = await _claim(store, task, "w1", 0)
    assert await store.claim_lease(task.id, "w2", TTL, now=at(TTL - 1)) is None
    assert await store.get_lease(task.id) == held


async def test_expired_lease_can_be_claimed_with_next_token(store: StateStore, task: Task) -> None:
    await _claim(store, task, "w1", 0)
    taken = await _claim(store, task, "w2", TTL + 1)
    assert (taken.owner, taken.token) == ("w2", 2)
    assert taken.expires_at == at(2 * TTL + 1)


async def test_released_lease_can_be_claimed_at_once(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1", 0)
    await store.release_lease(lease)
    released = await store.get_lease(task.id)
    assert released is not None and released.released and released.token == 1
    again = await _claim(store, task, "w2", 1)
    assert again.token == 2


async def test_renew_extends_the_lease(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1", 0)
    renewed = await store.renew_lease(lease, 60, now=at(20))
    assert (renewed.token, renewed.owner) == (lease.token, "w1")
    assert renewed.expires_at == at(80)
    assert await store.get_lease(task.id) == renewed
    assert await store.claim_lease(task.id, "w2", TTL, now=at(TTL + 1)) is None


async def test_renew_records_when_the_heartbeat_was_heard(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1", 0)
    assert (lease.renewed_at, lease.heard_at) == (None, at(0))
    renewed = await store.renew_lease(lease, TTL, now=at(20))

    assert renewed.renewed_at == renewed.heard_at == at(20)
    assert await store.get_lease(task.id) == renewed
    assert await store.held_leases() == [renewed]
    assert [claim.renewed_at for claim in await store.lease_history(task.id)] == [at(20)]
    taken = await _claim(store, task, "w2", 2 * TTL)  # a new claim has not been renewed yet
    assert (await store.get_lease(task.id)) == taken and taken.renewed_at is None


async def test_renew_of_an_expired_but_unreplaced_lease(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1", 0)
    renewed = await store.renew_lease(lease, TTL, now=at(TTL + 5))
    assert renewed.expires_at == at(2 * TTL + 5)


async def test_replaced_lease_is_lost(store: StateStore, task: Task) -> None:
    stale = await _claim(store, task, "w1", 0)
    current = await _claim(store, task, "w2", TTL + 1)
    with pytest.raises(LeaseLost):
        await store.renew_lease(stale, TTL, now=at(TTL + 2))
    with pytest.raises(LeaseLost):
        await store.release_lease(stale)
    assert await store.get_lease(task.id) == current


async def test_released_lease_is_lost(store: StateStore, task: Task) -> None:
    lease = await _claim(store, task, "w1", 0)
    await store.release_lease(lease)
    with pytest.raises(LeaseLost):
        await store.release_lease(lease)
    with pytest.raises(LeaseLost):
        await store.renew_lease(lease, TTL, now=at(1))


async def test_take_over_replaces_a_live_lease(store: StateStore, task: Task) -> None:
    held = await _claim(store, task, "w1", 0)
    taken = await _claim(store, task, "w2", 1, take_over=True)
    assert (taken.owner, taken.token) == ("w2", 2)
    with pytest.raises(LeaseLost):
        await store.renew_lease(held, TTL, now=at(2))
    assert await store.get_lease(task.id) == taken


async def test_replacing_takes_over_only_the_lease_it_names(store: StateStore, task: Task) -> None:
    dead = await _claim(store, task, "w1", 0)
    taken = await _claim(store, task, "w2", 1, replacing=dead.token)

    assert (taken.owner, taken.token, taken.took_over) == ("w2", 2, True)
    # A second claimer that judged the same holder dead finds the lease taken: it is refused.
    assert await store.claim_lease(task.id, "w3", TTL, replacing=dead.token, now=at(2)) is None
    assert await store.get_lease(task.id) == taken


async def test_leases_of_tasks_are_independent(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    await _claim(store, task, "w1", 0)
    theirs = await _claim(store, other, "w2", 0)
    assert theirs.token == 1


async def test_history_shows_each_claim_from_grant_to_end(store: StateStore, task: Task) -> None:
    first = await _claim(store, task, "w1", 0)
    await store.renew_lease(first, 100, now=at(10))
    await store.release_lease(first, now=at(11))
    second = await _claim(store, task, "w2", 11)
    await store.renew_lease(second, TTL, now=at(12))
    third = await _claim(store, task, "w3", 20, take_over=True)
    fourth = await _claim(store, task, "w4", 20 + TTL + 1)

    history = await store.lease_history(task.id)
    assert [lease.token for lease in history] == [1, 2, 3, 4]
    assert [lease.owner for lease in history] == ["w1", "w2", "w3", "w4"]
    assert [lease.granted_at for lease in history] == [at(0), at(11), at(20), at(20 + TTL + 1)]
    # The first ended when it was released; the second lived to its last renewal's expiry.
    assert [lease.expires_at for lease in history[:2]] == [at(11), at(12 + TTL)]
    assert [lease.released for lease in history] == [True, False, False, False]
    # Only the third was granted over a live lease.
    assert [lease.took_over for lease in history] == [False, False, True, False]
    assert history[2:] == [third, fourth]
    assert (second.granted_at, second.took_over) == (at(11), False)


async def test_held_leases_are_every_lease_not_released_by_owner(store: StateStore) -> None:
    tasks = [await store.create_task(make_task(name)) for name in ("b", "a", "c")]
    b, a, c = [
        await _claim(store, task, owner, 0) for task, owner in zip(tasks, ("w2", "w1", "w1"), strict=True)
    ]
    released = await _claim(store, await store.create_task(make_task("d")), "w0", 0)
    await store.release_lease(released, now=at(1))

    held = await store.held_leases()

    assert [(lease.owner, lease.task_id) for lease in held] == [("w1", "a"), ("w1", "c"), ("w2", "b")]
    assert held == [a, c, b]

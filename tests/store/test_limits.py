"""The shared limits: each key's settings, its pacing (turns), its blocks, its slots, and a queue's places.

Every store runs these (memory, SQLite, PostgreSQL). Time moves through the
``now=`` parameter, never by sleeping.
"""

from __future__ import annotations

import datetime as dt

from ratchet.records import Limit
from ratchet.store import StateStore
from ratchet.store.ops.limits import SPACING, TURN_KEPT

from ..helpers.builders import at, make_task


def seconds(value: float) -> dt.timedelta:
    return dt.timedelta(seconds=value)


async def test_a_limit_set_is_listed_and_replaced_and_deleted(store: StateStore) -> None:
    await store.set_limit(Limit(key="openai:gpt-4o", rpm=60, tpm=1000))
    await store.set_limit(Limit(key="queue:emails", concurrency=2))
    await store.set_limit(Limit(key="openai:gpt-4o", rpm=30))

    listed = await store.list_limits()

    assert [(limit.key, limit.rpm, limit.tpm, limit.concurrency) for limit in listed] == [
        ("openai:gpt-4o", 30, None, None),
        ("queue:emails", None, None, 2),
    ]
    assert [limit.key for limit in await store.list_limits(["queue:emails", "gpu"])] == ["queue:emails"]
    assert await store.delete_limit("openai:gpt-4o") is True
    assert await store.delete_limit("openai:gpt-4o") is False
    assert [limit.key for limit in await store.list_limits()] == ["queue:emails"]


async def test_turns_under_an_rpm_limit_are_spaced_sixty_over_rpm_seconds(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", rpm=60))
    spacing = seconds(SPACING)

    first = await store.take_turn(["gpu:qwen", "gpu"], "t:1:1", now=at(0))
    second = await store.take_turn(["gpu:qwen", "gpu"], "t:2:1", now=at(0))
    third = await store.take_turn(["gpu:qwen", "gpu"], "t:3:1", now=at(0))

    assert first.at == at(0) and first.key is None
    assert second.at == at(0) + spacing and second.key == "gpu"
    assert third.at == at(0) + 2 * spacing


async def test_a_turn_kept_for_its_holder_is_given_back_to_it_not_taken_again(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", rpm=60))
    await store.take_turn(["gpu"], "a", now=at(0))
    kept = await store.take_turn(["gpu"], "b", now=at(0))

    again = await store.take_turn(["gpu"], "b", now=at(0.5))
    used = await store.take_turn(["gpu"], "b", now=kept.at)
    other = await store.take_turn(["gpu"], "c", now=kept.at)

    assert again.at == kept.at and used.at == kept.at
    assert other.at == at(0) + 2 * seconds(SPACING)  # b's turn was not taken a second time


async def test_a_key_without_limits_lets_every_call_go_at_once(store: StateStore) -> None:
    turns = [await store.take_turn(["openai:gpt-4o", "openai"], f"t:{n}:1", now=at(0)) for n in range(5)]

    assert {turn.at for turn in turns} == {at(0)}


async def test_tpm_charges_the_estimate_and_is_settled_with_the_real_usage(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", tpm=600))  # ten tokens a second

    await store.take_turn(["gpu"], "a", tokens=100, now=at(0))
    await store.settle_tokens(["gpu"], -50)  # it used 50 tokens, not 100
    turn = await store.take_turn(["gpu"], "b", tokens=10, now=at(0))

    assert turn.at == at(5) and turn.key == "gpu"


async def test_a_block_holds_every_call_of_its_key_until_it_ends(store: StateStore) -> None:
    await store.block_limit("openai:gpt-4o", at(30))
    await store.block_limit("openai:gpt-4o", at(10))  # a shorter one does not shorten it

    turn = await store.take_turn(["openai:gpt-4o", "openai"], "a", now=at(0))
    (limit,) = await store.list_limits()

    assert turn == (at(30), "openai:gpt-4o")
    assert limit.blocked_until == at(30) and not limit.is_set


async def test_a_block_after_a_kept_turn_moves_that_turn_past_it(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", rpm=60))
    await store.take_turn(["gpu"], "a", now=at(0))
    kept = await store.take_turn(["gpu"], "b", now=at(0))

    await store.block_limit("gpu", at(20))
    turn = await store.take_turn(["gpu"], "b", now=kept.at)

    assert turn.at == at(20)


async def test_turns_never_come_back_for_are_dropped(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", rpm=1))
    await store.take_turn(["gpu"], "a", now=at(0))
    await store.take_turn(["gpu"], "b", now=at(0))  # kept for b, which never comes back

    later = at(0) + TURN_KEPT + seconds(120)
    await store.take_turn(["gpu"], "c", now=later)
    turn = await store.take_turn(["gpu"], "b", now=later)

    assert turn.at > later  # b's old turn was dropped: it takes a new one


async def test_slots_count_calls_in_flight_while_their_lease_lives(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", concurrency=1))
    for task_id in ("t1", "t2"):
        await store.create_task(make_task(task_id))
    first = await store.claim_lease("t1", "w1", 30, now=at(0))
    second = await store.claim_lease("t2", "w2", 30, now=at(0))
    assert first is not None and second is not None

    assert await store.take_slot(["gpu:qwen", "gpu"], "t1:1:1", first, now=at(1)) is None
    assert await store.take_slot(["gpu:qwen", "gpu"], "t2:1:1", second, now=at(1)) == "gpu"
    await store.release_slots("t1:1:1")
    assert await store.take_slot(["gpu:qwen", "gpu"], "t2:1:1", second, now=at(2)) is None


async def test_a_slot_of_a_dead_worker_comes_back_when_its_lease_expires(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", concurrency=1))
    for task_id in ("t1", "t2"):
        await store.create_task(make_task(task_id))
    dead = await store.claim_lease("t1", "w1", 30, now=at(0))
    alive = await store.claim_lease("t2", "w2", 300, now=at(0))
    assert dead is not None and alive is not None
    assert await store.take_slot(["gpu"], "t1:1:1", dead, now=at(1)) is None  # never released

    assert await store.take_slot(["gpu"], "t2:1:1", alive, now=at(29)) == "gpu"
    assert await store.take_slot(["gpu"], "t2:1:1", alive, now=at(31)) is None


async def test_a_queue_holds_as_many_running_tasks_as_its_concurrency(store: StateStore) -> None:
    await store.set_limit(Limit(key="queue:emails", concurrency=2))
    for n in range(4):
        await store.create_task(make_task(f"t{n}", queue="emails", created_at=at(n)))
    await store.create_task(make_task("free", created_at=at(9)))

    claimed = await store.claim_tasks("w1", 30, limit=10, now=at(10))
    again = await store.claim_tasks("w2", 30, limit=10, now=at(11))

    assert [lease.task_id for lease in claimed] == ["t0", "t1", "free"]
    assert again == []
    live = {lease.task_id for lease in await store.held_leases() if lease.is_live(at(11))}
    assert live == {"t0", "t1", "free"}


async def test_a_queue_place_frees_when_a_lease_is_released_or_expires(store: StateStore) -> None:
    await store.set_limit(Limit(key="queue:emails", concurrency=1))
    for n in range(3):
        await store.create_task(make_task(f"t{n}", queue="emails", created_at=at(n)))
    (held,) = await store.claim_tasks("w1", 30, limit=10, now=at(10))

    await store.release_lease(held, now=at(12))
    (second,) = await store.claim_tasks("w2", 30, limit=10, now=at(13))
    (third,) = await store.claim_tasks("w3", 30, limit=10, now=at(13 + 31))  # w2 died: its lease expired

    # t0 never ended (its holders let go or died): each time the one place comes back, it takes it.
    assert (held.task_id, second.task_id, third.task_id) == ("t0", "t0", "t0")


async def test_a_partition_holds_the_queue_concurrency_apart_from_the_others(store: StateStore) -> None:
    await store.set_limit(Limit(key="queue:emails", concurrency=1))
    for n in range(3):
        await store.create_task(make_task(f"a{n}", queue="emails", partition="a", created_at=at(n)))
    await store.create_task(make_task("b0", queue="emails", partition="b", created_at=at(5)))

    claimed = await store.claim_tasks("w1", 30, limit=10, now=at(10))

    assert [lease.task_id for lease in claimed] == ["a0", "b0"]


async def test_a_claim_judged_over_the_queue_concurrency_gives_its_lease_back(store: StateStore) -> None:
    await store.set_limit(Limit(key="queue:emails", concurrency=1))
    for n in range(2):
        await store.create_task(make_task(f"t{n}", queue="emails", created_at=at(n)))
    first = await store.claim_lease("t0", "w1", 30, now=at(10))
    second = await store.claim_lease("t1", "w2", 30, now=at(10))  # a trigger's claim: not judged yet
    assert first is not None and second is not None

    assert await store.queue_turn(second, now=at(11)) is False
    assert await store.queue_turn(first, now=at(11)) is True
    given_back = await store.get_lease("t1")
    assert given_back is not None and given_back.released


async def test_a_turn_soon_enough_to_wait_for_in_place_is_not_kept(store: StateStore) -> None:
    await store.set_limit(Limit(key="gpu", rpm=60))
    await store.take_turn(["gpu"], "a", now=at(0))
    soon = await store.take_turn(["gpu"], "b", keep_after=5, now=at(0))

    again = await store.take_turn(["gpu"], "b", keep_after=5, now=at(0))

    assert again.at == soon.at + seconds(SPACING)  # not kept: asking again takes the next turn

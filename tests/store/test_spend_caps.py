"""Spend caps: set, listed with a day's spend, deleted; counted toward by the tasks they cover.

Every store runs these (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import datetime as dt

import pytest

from ratchet.records import CapScope, SpendCap
from ratchet.store import StateStore

from ..helpers.builders import at, make_task

DAY = dt.date(2026, 3, 1)
NEXT = dt.date(2026, 3, 2)


async def test_a_cap_set_again_keeps_its_creation_and_its_spend(store: StateStore) -> None:
    first = await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="a", daily=5.0, created_at=at(0)))
    await store.create_task(make_task("t1", agent="a"))
    await store.count_spend("t1", 1.25, day=DAY)

    again = await store.set_spend_cap(
        SpendCap(
            scope=CapScope.AGENT, name="a", daily=2.0, approve_over=True, created_at=at(9), updated_at=at(9)
        )
    )

    assert (again.daily, again.approve_over, again.created_at, again.updated_at) == (
        2.0,
        True,
        first.created_at,
        at(9),
    )
    [listed] = await store.list_spend_caps(day=DAY)
    assert (listed.cap, listed.spent, listed.day, listed.reached) == (again, 1.25, DAY, False)


async def test_spend_counts_toward_the_caps_covering_the_task_and_per_day(store: StateStore) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="a", daily=1.0))
    await store.set_spend_cap(SpendCap(scope=CapScope.LABEL, name="team=red", daily=3.0))
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="b", daily=1.0))
    await store.create_task(make_task("t1", agent="a", labels={"team": "red"}))
    await store.create_task(make_task("t2", agent="c", labels={"team": "red"}))
    await store.create_task(make_task("t3", agent="c", labels={"team": "blue"}))

    await store.count_spend("t1", 0.5, day=DAY)
    await store.count_spend("t1", 0.75, day=DAY)
    await store.count_spend("t2", 1.0, day=DAY)
    await store.count_spend("t3", 9.0, day=DAY)  # no cap covers it: counted nowhere
    await store.count_spend("t2", 0.25, day=NEXT)

    assert [(s.cap.target, s.spent, s.reached) for s in await store.spend_for_task("t1", day=DAY)] == [
        ("agent:a", 1.25, True),
        ("label:team=red", 2.25, False),
    ]
    assert [(s.cap.target, s.spent) for s in await store.list_spend_caps(day=NEXT)] == [
        ("agent:a", 0.0),
        ("agent:b", 0.0),
        ("label:team=red", 0.25),
    ]
    assert await store.spend_for_task("t3", day=DAY) == []
    assert await store.spend_for_task("nope", day=DAY) == []


async def test_the_pressure_of_a_cap_is_told_once_a_day(store: StateStore) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="a", daily=1.0))
    await store.create_task(make_task("t1", agent="a"))
    assert not await store.mark_spend_pressure(CapScope.AGENT, "a", day=DAY)  # nothing spent yet
    await store.count_spend("t1", 0.9, day=DAY)

    assert await store.mark_spend_pressure(CapScope.AGENT, "a", day=DAY)
    assert not await store.mark_spend_pressure(CapScope.AGENT, "a", day=DAY)
    [spend] = await store.spend_for_task("t1", day=DAY)
    assert spend.pressure_told
    await store.count_spend("t1", 0.9, day=NEXT)
    assert await store.mark_spend_pressure(CapScope.AGENT, "a", day=NEXT)


async def test_a_deleted_cap_takes_its_spend_with_it(store: StateStore) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.LABEL, name="team=red", daily=1.0))
    await store.create_task(make_task("t1", labels={"team": "red"}))
    await store.count_spend("t1", 0.5, day=DAY)

    assert await store.delete_spend_cap(CapScope.LABEL, "team=red")
    assert not await store.delete_spend_cap(CapScope.LABEL, "team=red")

    assert await store.list_spend_caps(day=DAY) == []
    await store.set_spend_cap(SpendCap(scope=CapScope.LABEL, name="team=red", daily=1.0))
    assert [s.spent for s in await store.spend_for_task("t1", day=DAY)] == [0.0]


async def test_a_failed_transaction_counts_nothing(store: StateStore) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="a", daily=1.0))
    await store.create_task(make_task("t1", agent="a"))

    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.count_spend("t1", 0.5, day=DAY)
            raise RuntimeError("the journal write failed")

    assert [s.spent for s in await store.spend_for_task("t1", day=DAY)] == [0.0]

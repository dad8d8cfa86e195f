"""What model calls cost by UTC day, agent and model, added up from the journal (`cost_totals`).

Every store runs these (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ratchet.records import OpKind, OpStatus
from ratchet.store import StateStore

from ..helpers.builders import finish, make_op, make_task

DAY = dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.UTC)
NEXT = dt.datetime(2026, 3, 2, 0, 30, tzinfo=dt.UTC)


async def _call(
    store: StateStore,
    task_id: str,
    seq: int,
    finished_at: dt.datetime,
    cost: float | None,
    *,
    status: OpStatus = OpStatus.SUCCEEDED,
    kind: OpKind = OpKind.MODEL,
    **asked: Any,
) -> None:
    op = make_op(task_id, seq, kind=kind, name="model:act", input={"purpose": "act", "messages": [], **asked})
    await store.record_op_started(op)
    usage = {"prompt_tokens": 100, "completion_tokens": 50, "cost": cost}
    await store.record_op_finished(finish(op, status, finished_at=finished_at, meta={"usage": usage}))


async def test_calls_are_added_up_by_day_agent_and_model(store: StateStore) -> None:
    await store.create_task(make_task("t1", agent="a", model="gw:gpt-4o"))
    await store.create_task(make_task("t2", agent="b", model="openai:gpt-4o-mini"))
    await store.create_task(make_task("t3", agent="b"))
    await _call(store, "t1", 0, DAY, 0.5)
    await _call(store, "t1", 1, DAY, 0.25)
    await _call(store, "t1", 2, DAY, 0.125, model="other:judge")  # asked of another model
    await _call(store, "t1", 3, NEXT, None)  # no price known: counted, not priced
    await _call(store, "t1", 4, DAY, 9.0, status=OpStatus.FAILED)  # a failed call costs nothing here
    await _call(store, "t1", 5, DAY, 9.0, kind=OpKind.TOOL)
    # A large input is stored with its large parts apart: the model it names is still read.
    big = [{"role": "user", "content": "word " * 200}]
    await _call(store, "t2", 0, DAY, 1.0, model="big:model", messages=big)
    await _call(store, "t2", 1, DAY, 2.0)
    await _call(store, "t3", 0, NEXT, 0.0)  # a task without a model: "unknown"

    totals = await store.cost_totals(since=None, until=None)

    assert [
        (t.day.isoformat(), t.agent, t.model, t.calls, t.unpriced_calls, t.llm_tokens, t.cost) for t in totals
    ] == [
        ("2026-03-01", "a", "gw:gpt-4o", 2, 0, 300, 0.75),
        ("2026-03-01", "a", "other:judge", 1, 0, 150, 0.125),
        ("2026-03-01", "b", "big:model", 1, 0, 150, 1.0),
        ("2026-03-01", "b", "openai:gpt-4o-mini", 1, 0, 150, 2.0),
        ("2026-03-02", "a", "gw:gpt-4o", 1, 1, 150, 0.0),
        ("2026-03-02", "b", "unknown", 1, 0, 150, 0.0),
    ]


async def test_a_window_counts_the_calls_that_finished_in_it(store: StateStore) -> None:
    await store.create_task(make_task("t1", agent="a", model="gw:gpt-4o"))
    await _call(store, "t1", 0, DAY, 0.5)
    await _call(store, "t1", 1, NEXT, 0.25)

    after = await store.cost_totals(since=NEXT, until=None)
    before = await store.cost_totals(since=None, until=NEXT)

    assert [(t.day, t.cost) for t in after] == [(NEXT.date(), 0.25)]
    assert [(t.day, t.cost) for t in before] == [(DAY.date(), 0.5)]
    assert await store.cost_totals(since=NEXT, until=NEXT) == []


async def test_no_calls_no_totals(store: StateStore) -> None:
    await store.create_task(make_task("t1"))
    assert await store.cost_totals(since=None, until=None) == []

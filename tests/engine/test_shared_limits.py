"""Model calls under the limits every worker shares: a turn waited for parks the task ``waiting(limit)``
and burns no attempt; a 429's Retry-After holds the next call of every runtime on that key.

The model is a real OpenAI-compatible server on loopback that refuses what
its window cannot take (`tests.helpers.limited_server`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator

import pytest

from ratchet.engine.calls.limiting import WAKE_LEAD
from ratchet.records import Limit, OpKind, OpStatus, TaskStatus, WaitReason, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore, open_store

from ..helpers.limited_server import LimitedServer
from .limited_flows import HERE

MODEL = "openai:limited"


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LimitedServer]:
    with LimitedServer(limit=1, window=3.0) as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield running


async def test_a_call_over_an_rpm_limit_parks_and_completes_later_without_a_failed_attempt(
    rt: Runtime, store: StateStore, server: LimitedServer
) -> None:
    server.limit = 10
    warm = await rt.run(f"{HERE}:ask", {"prompt": "warm up"}, model=MODEL)  # the client loaded, unlimited
    assert warm.status is TaskStatus.COMPLETED, warm.error
    await store.set_limit(Limit(key="openai", rpm=10))  # a turn every 6 s: more than is waited in place

    parked = await rt.run(f"{HERE}:ask", {"prompt": "hello", "times": 2}, model=MODEL)

    assert (parked.status, parked.waiting_on) == (TaskStatus.WAITING, WaitReason.LIMIT)
    assert parked.status_text == "waiting(limit)"
    waiting = [event for event in await store.list_events(parked.id) if event.kind == "waiting"]
    assert waiting[-1].data["limit"] == "openai"
    turn = dt.datetime.fromisoformat(str(waiting[-1].data["until"]))
    assert dt.timedelta(seconds=5) < turn - utcnow() <= dt.timedelta(seconds=6.1)
    (trigger,) = await store.list_triggers(parked.id)
    assert trigger.fire_at == turn - WAKE_LEAD  # woken a little early, it waits the rest in place
    await asyncio.sleep((trigger.fire_at - utcnow()).total_seconds())

    done = await rt.resume(parked.id)

    assert done.status is TaskStatus.COMPLETED, done.error
    models = [op for op in await store.list_ops(done.id) if op.kind is OpKind.MODEL]
    assert [(op.status, op.attempt) for op in models] == [(OpStatus.SUCCEEDED, 1), (OpStatus.SUCCEEDED, 1)]
    assert not [event for event in await store.list_events(done.id) if event.kind == "retry"]
    assert len(server.accepted) == 3 and server.refused == []
    assert server.accepted[2] - server.accepted[1] >= 6.0


async def test_a_429_received_by_one_runtime_holds_the_next_call_of_another_on_that_key(
    rt: Runtime, store: StateStore, store_url: str, server: LimitedServer
) -> None:
    first = await rt.run(f"{HERE}:ask", {"prompt": "first"}, model=MODEL)
    refused = await rt.run(f"{HERE}:ask_once", {"prompt": "refused"}, model=MODEL)
    assert first.status is TaskStatus.COMPLETED
    assert refused.status is TaskStatus.FAILED and "429" in (refused.error or "")
    (blocked,) = await store.list_limits([MODEL])
    assert blocked.blocked_until is not None and blocked.blocked_until > utcnow()

    other = await open_store(store_url)  # another runtime, on its own connection
    try:
        later = await Runtime(other).run(f"{HERE}:ask_once", {"prompt": "later"}, model=MODEL)
    finally:
        await other.close()

    assert later.status is TaskStatus.COMPLETED, later.error
    assert len(server.refused) == 1  # it waited the block out instead of being refused too
    assert server.accepted[-1] >= blocked.blocked_until.timestamp() - 0.01


async def test_a_concurrency_limit_on_a_model_holds_its_calls_in_flight_one_at_a_time(
    rt: Runtime, store: StateStore, server: LimitedServer
) -> None:
    server.limit, server.delay = 10, 0.3
    await store.set_limit(Limit(key=MODEL, concurrency=1))

    done = await asyncio.gather(*[rt.run(f"{HERE}:ask", {"prompt": f"p{n}"}, model=MODEL) for n in range(3)])

    assert [task.status for task in done] == [TaskStatus.COMPLETED] * 3
    assert len(server.accepted) == 3 and server.most_in_flight == 1

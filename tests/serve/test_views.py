"""Item 3's API additions: a task's call timeline (every attempt), its budget, each worker's heartbeat age."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import httpx
import pytest

from ratchet.policy import Budget
from ratchet.records import TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore, open_store

from ..engine.flows import FLOWS
from .support import client_for


@pytest.fixture(params=["memory", "database"])
async def each_store(request: pytest.FixtureRequest, api_store: StateStore) -> AsyncIterator[StateStore]:
    """The API's stores (SQLite, PostgreSQL) and the memory store."""
    if request.param == "database":
        yield api_store
        return
    store = await open_store("memory://")
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def client(each_store: StateStore) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(each_store) as served:
        yield served


async def test_the_timeline_shows_each_attempt_of_a_retried_call(
    client: httpx.AsyncClient, each_store: StateStore, ledger: str
) -> None:
    task = await Runtime(each_store).run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"})
    assert task.status is TaskStatus.COMPLETED

    answer = await client.get(f"/api/tasks/{task.id}/timeline")

    assert answer.status_code == 200
    flaky = [row for row in answer.json()["attempts"] if row["name"] == "flaky"]
    assert [(row["attempt"], row["status"], row["retried"]) for row in flaky] == [
        (1, "failed", True),
        (2, "failed", True),
        (3, "succeeded", False),
    ]
    for row in flaky:
        started, finished = (
            dt.datetime.fromisoformat(row["started_at"]),
            dt.datetime.fromisoformat(row["finished_at"]),
        )
        assert started <= finished and row["duration_seconds"] == (finished - started).total_seconds()
    ends = [dt.datetime.fromisoformat(row["finished_at"]) for row in flaky]
    starts = [dt.datetime.fromisoformat(row["started_at"]) for row in flaky]
    assert ends[0] <= starts[1] and ends[1] <= starts[2]  # one after the other, as they ran
    assert "attempt 1 failed" in flaky[0]["error"]
    assert (await client.get("/api/tasks/nobody/timeline")).status_code == 404


async def test_the_budget_shows_limits_use_and_what_is_left(
    client: httpx.AsyncClient, each_store: StateStore, ledger: str
) -> None:
    task = await Runtime(each_store).run(
        f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"}, budget=Budget(max_wall_time=3600)
    )

    answer = await client.get(f"/api/tasks/{task.id}/budget")

    assert answer.status_code == 200
    shown = answer.json()
    assert set(shown) == {"limits", "used", "left"}
    assert shown["limits"] == {"steps": None, "llm_tokens": None, "cost": None, "wall_time": 3600}
    assert 0 <= shown["used"]["wall_time"] < 3600 and shown["left"]["steps"] is None
    assert shown["left"]["wall_time"] == pytest.approx(3600 - shown["used"]["wall_time"])
    assert (await client.get("/api/tasks/nobody/budget")).status_code == 404


async def test_each_worker_shows_when_its_heartbeat_was_last_heard(
    client: httpx.AsyncClient, each_store: StateStore, ledger: str
) -> None:
    first = await Runtime(each_store).submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"})
    second = await Runtime(each_store).submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"})
    now = utcnow()
    held = await each_store.claim_lease(
        first, "w-1", 300, host="box", pid=7, now=now - dt.timedelta(seconds=90)
    )
    assert held is not None
    await each_store.renew_lease(held, 300, now=now - dt.timedelta(seconds=20))
    assert await each_store.claim_lease(second, "w-2", 300, now=now - dt.timedelta(seconds=40)) is not None

    workers = {worker["worker"]: worker for worker in (await client.get("/api/workers")).json()}

    renewed, claimed = workers["w-1"], workers["w-2"]
    assert dt.datetime.fromisoformat(renewed["heartbeat_at"]) == now - dt.timedelta(seconds=20)
    assert 20 <= renewed["heartbeat_age_seconds"] < 80
    assert renewed["leases"][0]["renewed_at"] == renewed["heartbeat_at"]
    assert dt.datetime.fromisoformat(claimed["heartbeat_at"]) == now - dt.timedelta(seconds=40)
    assert 40 <= claimed["heartbeat_age_seconds"] < 100 and claimed["leases"][0]["renewed_at"] is None

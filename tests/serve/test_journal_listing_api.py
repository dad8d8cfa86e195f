"""The API reads what the CLI reads: the journal's entries (one implementation, ratchet.views.journal)
and the task list (the store's `list_task_rows`), on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import httpx

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..engine.flows import FLOWS
from ..helpers.builders import make_task

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def test_the_journal_gives_each_retried_calls_earlier_attempts_as_the_timeline_does(
    api: httpx.AsyncClient, api_store: StateStore, ledger: str
) -> None:
    task = await Runtime(api_store).run(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"})
    assert task.status is TaskStatus.COMPLETED

    [call] = [
        e for e in (await api.get(f"/api/tasks/{task.id}/journal")).json()["calls"] if e["name"] == "flaky"
    ]
    timeline = [
        row
        for row in (await api.get(f"/api/tasks/{task.id}/timeline")).json()["attempts"]
        if row["name"] == "flaky"
    ]

    assert (call["attempt"], call["retried"], call["in_doubt"], call["was_in_doubt"]) == (
        3,
        True,
        False,
        None,
    )
    assert [
        (a["attempt"], a["started_at"], a["failed_at"], a["error"]) for a in call["earlier_attempts"]
    ] == [(row["attempt"], row["started_at"], row["finished_at"], row["error"]) for row in timeline[:2]]
    assert (call["run"], call["replayed"]) == (1, False)  # one run (one lease) recorded every call


async def test_the_task_list_filters_orders_and_pages_in_the_store(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    for i, agent in enumerate(["a", "b", "a", "a", "b"]):
        at = T0 + dt.timedelta(minutes=i)
        await api_store.create_task(make_task(f"t{i}", name="job", agent=agent, created_at=at))

    first = (await api.get("/api/tasks", params={"agent": "a", "limit": 2})).json()
    second = (await api.get("/api/tasks", params={"agent": "a", "limit": 2, "offset": 2})).json()
    window = (
        await api.get(
            "/api/tasks",
            params={
                "created_after": (T0 + dt.timedelta(minutes=1)).isoformat(),
                "created_before": (T0 + dt.timedelta(minutes=3)).isoformat(),
            },
        )
    ).json()

    assert set(first) == {"tasks", "total", "next_cursor", "next_offset", "unreadable", "replica"}
    assert ([t["task_id"] for t in first["tasks"]], first["total"], first["next_offset"]) == (
        ["t0", "t2"],
        3,
        2,
    )
    assert ([t["task_id"] for t in second["tasks"]], second["next_offset"]) == (["t3"], None)
    assert [t["task_id"] for t in window["tasks"]] == ["t1", "t2"]
    assert first["tasks"][0]["instruction"] == "do the thing"  # whole records, as before

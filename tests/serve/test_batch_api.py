"""``POST /api/tasks/batch``: without ``confirm`` a count and nothing done; with it every task the filter
keeps acted on as its own route acts (skipped ones with why); the filter is ``GET /api/tasks``', and a bad
one, none, or a body that does not fit is one line and a 4xx. On SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest

from ratchet.errors import TaskNotFound
from ratchet.records import TaskStatus
from ratchet.store import StateStore

from ..helpers.builders import make_task

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
# id: status, team (made a minute apart, in this order)
SPECS = {
    "a1": (TaskStatus.COMPLETED, "a"),
    "a2": (TaskStatus.FAILED, "a"),
    "a3": (TaskStatus.QUEUED, "a"),
    "a4": (TaskStatus.QUEUED, "a"),
    "b1": (TaskStatus.QUEUED, "b"),
}


@pytest.fixture
async def stored(api_store: StateStore) -> None:
    for i, (task_id, (status, team)) in enumerate(SPECS.items()):
        at = T0 + dt.timedelta(minutes=i)
        task = make_task(task_id, status=status, labels={"team": team}, created_at=at, updated_at=at)
        await api_store.create_task(task)


async def _batch(api: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    answer = await api.post("/api/tasks/batch", json=body)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert isinstance(found, dict)
    return found


async def _statuses(store: StateStore) -> dict[str, TaskStatus]:
    return {task_id: (await store.get_task(task_id)).status for task_id in SPECS}


TEAM_A: dict[str, Any] = {"label": ["team=a"]}


@pytest.mark.parametrize("action", ["cancel", "retry", "delete"])
async def test_without_confirm_it_counts_and_does_nothing(
    api: httpx.AsyncClient, api_store: StateStore, stored: None, action: str
) -> None:
    before = await _statuses(api_store)

    assert await _batch(api, action=action, filter=TEAM_A) == {"matched": 4}
    assert await _batch(api, action=action, filter={**TEAM_A, "status": ["queued"]}, confirm=False) == {
        "matched": 2
    }
    assert await _statuses(api_store) == before


async def test_cancel_confirmed_cancels_each_with_the_reason_and_skips_the_ended(
    api: httpx.AsyncClient, api_store: StateStore, stored: None
) -> None:
    done = await _batch(api, action="cancel", filter=TEAM_A, reason="superseded", confirm=True)

    assert (done["matched"], done["done"]) == (4, 2)
    assert done["skipped"] == [
        {"id": "a2", "reason": "task a2 is already failed; it cannot be cancelled"},
        {"id": "a1", "reason": "task a1 is already completed; it cannot be cancelled"},
    ]
    for task_id in ("a3", "a4"):
        task = await api_store.get_task(task_id)
        assert (task.status, task.error) == (TaskStatus.CANCELLED, "superseded")
        assert "task_cancelled" in [event.kind for event in await api_store.list_events(task_id)]
    assert (await api_store.get_task("b1")).status is TaskStatus.QUEUED


async def test_retry_confirmed_makes_a_queued_retry_of_each_failed_task(
    api: httpx.AsyncClient, api_store: StateStore, stored: None
) -> None:
    done = await _batch(api, action="retry", filter={"status": ["failed", "completed"]}, confirm=True)

    assert (done["matched"], done["done"]) == (2, 1)
    assert done["skipped"] == [{"id": "a1", "reason": "task a1 completed; there is nothing to retry"}]
    retry = await api_store.get_task("a2-retry1")
    assert (retry.status, retry.forked_from) == (TaskStatus.QUEUED, "a2")


async def test_delete_confirmed_deletes_the_ended_tasks(
    api: httpx.AsyncClient, api_store: StateStore, stored: None
) -> None:
    done = await _batch(api, action="delete", filter={"created_before": "2026-01-01T00:02:30Z"}, confirm=True)

    assert (done["matched"], done["done"]) == (3, 2)
    assert [skipped["id"] for skipped in done["skipped"]] == ["a3"]  # queued: not ended
    for task_id in ("a1", "a2"):
        with pytest.raises(TaskNotFound):
            await api_store.get_task(task_id)
    assert (await api.get("/api/tasks/a1")).status_code == 404


async def test_min_cost_may_be_a_number_or_text(
    api: httpx.AsyncClient, api_store: StateStore, stored: None
) -> None:
    assert await _batch(api, action="cancel", filter={"min_cost": 0}) == {"matched": 5}
    assert await _batch(api, action="cancel", filter={"min_cost": "0.50"}) == {"matched": 0}


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        ({"action": "cancel", "filter": {"status": ["done"]}}, 400, "status: unknown status 'done'"),
        ({"action": "cancel", "filter": {"created_after": "yesterday"}}, 400, "created_after: 'yesterday'"),
        ({"action": "retry", "filter": {"label": ["team"]}}, 400, "label: 'team' is not KEY=VALUE"),
        ({"action": "delete", "filter": {"min_cost": "abc"}}, 400, "min_cost: 'abc' is not an amount"),
        ({"action": "delete", "filter": {}, "confirm": True}, 400, "give at least one filter"),
        ({"action": "delete"}, 400, "give at least one filter"),
        ({"action": "retry", "filter": TEAM_A, "reason": "x"}, 400, "reason is for cancel"),
        ({"action": "pause", "filter": TEAM_A}, 422, "action"),
        ({"action": "cancel", "filter": {"owner": "me"}}, 422, "owner"),
        ({"action": "cancel", "filter": {"status": ["queued"] * 65}}, 422, "status"),
        ({"filter": TEAM_A}, 422, "action"),
    ],
)
async def test_bad_input_is_one_line_and_nothing_is_done(
    api: httpx.AsyncClient,
    api_store: StateStore,
    stored: None,
    body: dict[str, Any],
    status: int,
    expected: str,
) -> None:
    before = await _statuses(api_store)

    answer = await api.post("/api/tasks/batch", json={**body, "confirm": True})

    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert expected in detail and "\n" not in detail
    assert await _statuses(api_store) == before


async def test_the_same_filter_lists_what_the_batch_counts(
    api: httpx.AsyncClient, api_store: StateStore, stored: None
) -> None:
    listed = await api.get("/api/tasks", params={"label": "team=a", "status": ["queued", "failed"]})
    counted = await _batch(api, action="cancel", filter={"label": ["team=a"], "status": ["queued", "failed"]})

    assert listed.json()["total"] == counted["matched"] == 3

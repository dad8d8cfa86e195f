"""``GET /api/tasks`` finds tasks as `ratchet tasks` does (one filter parser, one store operation): every
filter, every order, a cursor stable under inserts and a total; bad or hostile values are one line and
a 4xx, never a 500 nor a database's error; on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from ratchet.records import TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.builders import make_task

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
async def stored(api_store: StateStore) -> None:
    """Six tasks: names, labels, models, costs, a parent, results and a waiting one."""
    specs: list[dict[str, Any]] = [
        {"name": "invoice march", "labels": {"team": "billing", "env": "prod"}, "cost": 0.5},
        {"name": "invoice april", "labels": {"team": "billing", "env": "dev"}, "cost": 2.0},
        {"name": "backup", "labels": {"team": "ops"}, "model": "openai:gpt-4o-mini"},
        {"name": "refund", "status": TaskStatus.COMPLETED, "result": "refunded to the card", "cost": 1.0},
        {"name": "child", "parent_id": "t0", "status": TaskStatus.WAITING, "waiting_on": WaitReason.APPROVAL},
        {"name": "zeta", "instruction": "publish the post-mortem", "cost": 3.0},
    ]
    for i, fields in enumerate(specs):
        at = T0 + dt.timedelta(minutes=i)
        await api_store.create_task(make_task(f"t{i}", created_at=at, updated_at=at, **fields))


async def _ids(api: httpx.AsyncClient, **params: Any) -> list[str]:
    answer = await api.get("/api/tasks", params=params)
    assert answer.status_code == 200, answer.text
    return [task["task_id"] for task in answer.json()["tasks"]]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"search": "invoice"}, ["t0", "t1"]),
        ({"search": "INVOICE mar"}, ["t0"]),
        ({"search": "refunded card"}, ["t3"]),  # a completed task's result
        ({"search": "post mortem"}, ["t5"]),
        ({"label": "team=billing"}, ["t0", "t1"]),
        ({"label": ["team=billing", "env=dev"]}, ["t1"]),
        ({"label": "team=billing", "search": "march"}, ["t0"]),
        ({"status": ["completed", "waiting"]}, ["t3", "t4"]),
        ({"waiting_on": "approval"}, ["t4"]),
        ({"model": "openai:gpt-4o-mini"}, ["t2"]),
        ({"parent": "t0"}, ["t4"]),
        ({"id_prefix": "t3"}, ["t3"]),
        ({"min_cost": "1", "max_cost": "2.5"}, ["t1", "t3"]),
        ({"created_after": (T0 + dt.timedelta(minutes=4)).isoformat()}, ["t4", "t5"]),
        ({"created_before": "2h"}, ["t0", "t1", "t2", "t3", "t4", "t5"]),  # how long ago
        ({"sort": "-cost"}, ["t5", "t1", "t3", "t0", "t4", "t2"]),  # ties: the newest first
        ({"sort": "name"}, ["t2", "t4", "t1", "t0", "t3", "t5"]),
        ({"search": "'; DROP TABLE tasks; --"}, []),  # words: drop, table, tasks
        ({"search": '"invoice*'}, ["t0", "t1"]),  # FTS syntax is only words
        ({"search": "NEAR(invoice, march)"}, []),  # near is a word no task has
        ({"label": "team=x' OR '1'='1"}, []),
        ({"name": "invoice%"}, []),
    ],
)
async def test_each_filter_and_order_of_the_query(
    api: httpx.AsyncClient, stored: None, params: dict[str, Any], expected: list[str]
) -> None:
    assert await _ids(api, **params) == expected
    count = (await api.get("/api/tasks", params={**params, "limit": 1})).json()["total"]
    assert count == len(expected)


async def test_a_cursor_pages_through_every_task_once_while_tasks_are_made(
    api: httpx.AsyncClient, api_store: StateStore, stored: None
) -> None:
    seen: list[str] = []
    params: dict[str, Any] = {"sort": "-created", "limit": 2}
    totals = []
    while True:
        page = (await api.get("/api/tasks", params=params)).json()
        seen += [task["task_id"] for task in page["tasks"]]
        totals.append(page["total"])
        if len(seen) == 2:  # made while a person pages: newer than every page, on none of them
            await api_store.create_task(make_task("new", created_at=T0 + dt.timedelta(days=1)))
        if page["next_cursor"] is None:
            break
        assert page["next_offset"] is None or params.get("cursor") is None
        params["cursor"] = page["next_cursor"]

    assert seen == ["t5", "t4", "t3", "t2", "t1", "t0"]
    assert totals == [6, 7, 7]
    assert await _ids(api, sort="-created", limit=1) == ["new"]


async def test_offset_pages_and_says_where_the_next_page_starts(api: httpx.AsyncClient, stored: None) -> None:
    first = (await api.get("/api/tasks", params={"limit": 4})).json()
    second = (await api.get("/api/tasks", params={"limit": 4, "offset": first["next_offset"]})).json()

    assert set(first) == {"tasks", "total", "next_cursor", "next_offset", "unreadable", "replica"}
    assert first["replica"] is None  # no read replica (tests/store/test_read_replica.py has one)
    assert (first["total"], first["next_offset"], second["next_offset"]) == (6, 4, None)
    assert [t["task_id"] for t in second["tasks"]] == ["t4", "t5"]
    assert second["next_cursor"] is None
    assert first["tasks"][0]["labels"] == {"team": "billing", "env": "prod"}  # whole records


@pytest.mark.parametrize(
    ("params", "status", "said"),
    [
        ({"status": "done"}, 400, "status: unknown status 'done'"),
        ({"waiting_on": "godot"}, 400, "waiting_on: 'godot' is nothing a task waits on"),
        ({"label": "team"}, 400, "label: 'team' is not KEY=VALUE"),
        ({"label": "team="}, 400, "label: the label team has no value"),
        ({"label": "9x=1"}, 400, "is not a label key"),
        ({"label": ["a=1", "a=2"]}, 400, "label: 'a' is given twice"),
        ({"label": [f"k{i}=v" for i in range(33)]}, 400, "33 labels, more than the limit of 32"),
        ({"label": "k=" + "v" * 257}, 400, "label: the value of k is 257 characters, more than the limit"),
        ({"search": "*"}, 400, "search: '*' has no word to search for"),
        ({"search": " ".join(f"w{i}" for i in range(17))}, 400, "17 words, more than the limit of 16"),
        ({"search": "x" * 1001}, 422, "search: String should have at most 1000 characters"),
        ({"name": " "}, 400, "name needs a value"),
        ({"id_prefix": "a\x00b"}, 400, "id_prefix holds a NUL character"),
        ({"parent": "p" * 513}, 422, "parent: String should have at most 512 characters"),
        ({"label": ["k=" + "v" * 400]}, 422, "label.0: String should have at most 400 characters"),
        ({"min_cost": "abc"}, 400, "min_cost: 'abc' is not an amount of US dollars"),
        ({"max_cost": "-1"}, 400, "max_cost: '-1' is not an amount"),
        ({"min_cost": "nan"}, 400, "min_cost: 'nan' is not an amount"),
        ({"min_cost": "3", "max_cost": "1"}, 400, "min_cost (3.0) is more than max_cost (1.0)"),
        ({"created_after": "yesterday"}, 400, "created_after: 'yesterday' is neither a time"),
        ({"created_after": "1h", "created_before": "2h"}, 400, "must be before created_before"),
        ({"sort": "size"}, 400, "sort: 'size' is no column to sort by"),
        ({"cursor": "not-a-cursor"}, 400, "cursor: not a cursor this listing gave"),
        ({"cursor": "e30"}, 400, "cursor: not a cursor this listing gave"),  # base64 of {}
        ({"limit": 0}, 422, "limit"),
        ({"limit": 501}, 422, "limit"),
        ({"offset": -1}, 422, "offset"),
    ],
)
async def test_a_bad_or_hostile_value_is_one_line_and_a_4xx(
    api: httpx.AsyncClient, stored: None, params: dict[str, Any], status: int, said: str
) -> None:
    answer = await api.get("/api/tasks", params=params)

    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert said in detail and "\n" not in detail
    assert not any(word in detail.lower() for word in ("sqlite", "psycopg", "syntax", "traceback"))


async def test_a_cursor_of_another_sort_is_refused(api: httpx.AsyncClient, stored: None) -> None:
    page = (await api.get("/api/tasks", params={"sort": "name", "limit": 2})).json()

    answer = await api.get("/api/tasks", params={"sort": "-name", "cursor": page["next_cursor"]})

    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("cursor: it continues a listing sorted by name, not by -name")


async def test_a_task_submitted_with_labels_is_found_by_them(
    api: httpx.AsyncClient, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": [], "act": [], "verify": []})
    body = {"instruction": "Rotate the keys", "model": model, "labels": {"team": "sec"}}

    made = await api.post("/api/tasks", json=body)
    refused = await api.post("/api/tasks", json={**body, "labels": {"team": ""}})

    assert made.status_code == 201, made.text
    assert (made.json()["name"], made.json()["labels"]) == ("Rotate the keys", {"team": "sec"})
    assert await _ids(api, label="team=sec") == [made.json()["task_id"]]
    assert refused.status_code == 400
    assert refused.json()["detail"] == "labels: the label team has no value; give team=VALUE"

"""One row written wrong, straight into the database, is no way to take the HTTP API down for everyone.

A database writer (a bad restore, a careless script, someone with SQL
access) rewrites one approval or one entry of the task-change log. The API
then lists every other record, names the row it cannot read (its key and
what is wrong, as for a task or an event it cannot read), and the global
stream goes on past it.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from ratchet.records import Approval, TaskStatus, WaitReason
from ratchet.store import StateStore, open_store

from ..helpers.builders import make_task
from ..helpers.raw_sql import run_sql
from ..serve.live_server import SseReader, serve_live
from ..serve.support import client_for

TIMEOUT = 30.0
# What a writer may leave in a row's record: not JSON, JSON of another shape, another row's record.
DAMAGES = {
    "garbage": "{not json",
    "wrong shape": json.dumps({"task_id": 7, "status": ["pending"]}),
}


async def _waiting_for_approval(store: StateStore, task_id: str, seq: int) -> None:
    await store.create_task(make_task(task_id, status=TaskStatus.WAITING, waiting_on=WaitReason.APPROVAL))
    await store.request_approval(Approval(task_id=task_id, seq=seq, tool="pay", arguments={"to": task_id}))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
async def test_an_unreadable_approval_row_is_named_and_the_others_are_listed(url: str, damage: str) -> None:
    store = await open_store(url)
    try:
        for task_id, seq in (("t-before", 1), ("t-bad", 2), ("t-after", 3)):
            await _waiting_for_approval(store, task_id, seq)
        run_sql(url, "UPDATE approvals SET record = ? WHERE task_id = 't-bad'", DAMAGES[damage])
        # Another row holds the record of a call it is not: read as it stands, it would be that call's.
        moved = json.loads(run_sql(url, "SELECT record FROM approvals WHERE task_id = 't-after'")[0][0])
        await _waiting_for_approval(store, "t-moved", 4)
        run_sql(url, "UPDATE approvals SET record = ? WHERE task_id = 't-moved'", json.dumps(moved))

        async with client_for(store) as api:
            listed = await api.get("/api/approvals")
            of_task = await api.get("/api/tasks/t-bad/approvals")
            of_good_task = await api.get("/api/tasks/t-before/approvals", params={"pending": "true"})
    finally:
        await store.close()

    assert listed.status_code == of_task.status_code == of_good_task.status_code == 200, listed.text
    readable = [item for item in listed.json() if "unreadable" not in item]
    unreadable = [item for item in listed.json() if "unreadable" in item]
    assert [(item["task_id"], item["arguments"]) for item in readable] == [
        ("t-before", {"to": "t-before"}),
        ("t-after", {"to": "t-after"}),
    ]
    assert sorted((item["task_id"], item["seq"]) for item in unreadable) == [("t-bad", 2), ("t-moved", 4)]
    assert all(set(item) == {"task_id", "seq", "unreadable"} for item in unreadable)
    assert all(item["unreadable"] and "\n" not in item["unreadable"] for item in unreadable)
    moved_problem = next(item["unreadable"] for item in unreadable if item["task_id"] == "t-moved")
    assert "operation 3 of task 't-after'" in moved_problem
    assert [{**item, "unreadable": "?"} for item in of_task.json()] == [
        {"task_id": "t-bad", "seq": 2, "unreadable": "?"}
    ]
    assert [item["task_id"] for item in of_good_task.json()] == ["t-before"]


async def _three_tasks(url: str) -> None:
    store = await open_store(url)
    try:
        for n in (1, 2, 3):
            await store.create_task(make_task(f"t{n}"))
    finally:
        await store.close()


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_the_global_stream_goes_on_past_an_unreadable_change(url: str, damage: str) -> None:
    asyncio.run(_three_tasks(url))
    run_sql(url, "UPDATE task_changes SET record = ? WHERE position = 2", DAMAGES[damage])

    with (
        serve_live(url) as served,
        httpx.Client(base_url=served.base, timeout=TIMEOUT) as client,
        client.stream("GET", "/api/stream", params={"after": "0"}) as response,
    ):
        assert response.status_code == 200
        reader = SseReader(response)
        messages = [reader.next() for _ in range(3)]
        # Live changes still come after it.
        served.run(served.store.create_task(make_task("t4")))
        live = reader.next()

    assert [(m.event, m.id) for m in messages] == [("message", "1"), ("unreadable", "2"), ("message", "3")]
    assert [messages[0].json()["task_id"], messages[2].json()["task_id"]] == ["t1", "t3"]
    problem = messages[1].json()
    assert set(problem) == {"position", "unreadable"} and problem["position"] == 2
    assert problem["unreadable"] and "\n" not in problem["unreadable"]
    assert (live.id, live.json()["task_id"]) == ("4", "t4")

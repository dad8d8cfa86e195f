"""``GET /api/compare``: tasks side by side, on SQLite and PostgreSQL; what it cannot compare, a 4xx line."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore
from ratchet.trust.tokens import load_tokens

from ..helpers.task_page_flows import FLOWS
from .support import client_for


async def _fork(rt: Runtime, task_id: str, who: str) -> str:
    new_id = await rt.fork(task_id, 1, inputs={"who": who})
    assert (await rt.resume(new_id)).status is TaskStatus.COMPLETED
    return new_id


async def test_an_origin_and_its_forks_differ_where_the_input_is_read(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    rt = Runtime(api_store)
    origin = await rt.run(f"{FLOWS}:greets", {"who": "Oslo"})
    bergen = await _fork(rt, origin.id, "Bergen")
    oslo = await _fork(rt, origin.id, "Oslo")

    two = await api.get("/api/compare", params=[("task", origin.id), ("task", bergen)])
    three = await api.get("/api/compare", params=[("task", origin.id), ("task", bergen), ("task", oslo)])
    alike = await api.get("/api/compare", params=[("task", origin.id), ("task", oslo)])

    assert two.status_code == 200, two.text
    shown = two.json()
    assert [(row["step"], row["position"], row["mark"]) for row in shown["tool_calls"]] == [
        (1, 1, "same"),
        (2, 1, "differs"),
    ]
    assert [call["arguments"]["text"] for call in shown["tool_calls"][1]["calls"]] == ["Oslo", "Bergen"]
    assert (shown["shared_prefix"], shown["parted_at_seq"]) == (1, 1)
    assert [side["forked_from"] for side in shown["tasks"]] == [None, origin.id]
    assert [side["status"] for side in shown["tasks"]] == ["completed", "completed"]
    assert [row["mark"] for row in three.json()["tool_calls"]] == ["same", "differs"]
    assert [side["task_id"] for side in three.json()["tasks"]] == [origin.id, bergen, oslo]
    assert [row["mark"] for row in alike.json()["tool_calls"]] == ["same", "same"]
    assert alike.json()["parted_at_seq"] is None


@pytest.mark.parametrize(
    ("ids", "status", "said"),
    [
        ([], 400, "compare takes at least 2 task ids; 0 given"),
        (["ORIGIN"], 400, "compare takes at least 2 task ids; 1 given"),
        (["ORIGIN", "ORIGIN"], 400, "is given twice; compare each task once"),
        (["ORIGIN", *(f"t{n}" for n in range(8))], 400, "compare takes at most 8 task ids; 9 given"),
        (["ORIGIN", "no-such-task"], 404, "no task with id 'no-such-task'"),
        (["ORIGIN", "bad\x01id"], 400, "is not one a task can have"),
    ],
)
async def test_what_it_cannot_compare_is_one_line(
    api: httpx.AsyncClient, api_store: StateStore, ids: list[str], status: int, said: str
) -> None:
    origin = await Runtime(api_store).run(f"{FLOWS}:greets", {"who": "Oslo"})

    answer = await api.get("/api/compare", params=[("task", origin.id if i == "ORIGIN" else i) for i in ids])

    assert answer.status_code == status, answer.text
    assert said in answer.json()["detail"]
    assert "\n" not in answer.json()["detail"]


async def test_the_openapi_document_has_it(api: httpx.AsyncClient) -> None:
    document = (await api.get("/api/openapi.json")).json()

    [parameter] = document["paths"]["/api/compare"]["get"]["parameters"]
    assert (parameter["name"], parameter["in"]) == ("task", "query")


async def test_it_needs_the_token_every_read_needs(api_store: StateStore, tmp_path: Path) -> None:
    rt = Runtime(api_store)
    ids = {"task": [(await rt.run(f"{FLOWS}:greets", {"who": who})).id for who in ("Oslo", "Bergen")]}
    token_file = tmp_path / "tokens"
    token_file.write_text("s3cret-token\n")
    async with client_for(api_store, tokens=load_tokens(token_file)) as client:
        without = await client.get("/api/compare", params=ids)
        wrong = await client.get("/api/compare", params=ids, headers={"authorization": "Bearer nope"})
        right = await client.get("/api/compare", params=ids, headers={"authorization": "Bearer s3cret-token"})

    assert without.status_code == wrong.status_code == 401
    assert "tasks" not in without.text + wrong.text
    assert right.status_code == 200, right.text
    assert [side["task_id"] for side in right.json()["tasks"]] == ids["task"]

"""What the task page reads, on SQLite and PostgreSQL: the journal, timeline and events a page at a
time (stable while the task runs, no call twice, a total), one call whole, a checkpoint's state and
the diff of two, a fork with changed inputs, the family tree and the models that answered.

Every task is made by the real runtime from the workflows of `tests.helpers.task_page_flows`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from ratchet import Agent
from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.scripts import plan, say, verdict
from ..helpers.task_page_flows import FLOWS


async def _pages(
    api: httpx.AsyncClient, path: str, key: str, limit: int, after: int = -1
) -> list[dict[str, Any]]:
    """Every page of `path` from `after` on: each page's answer, in order."""
    pages = []
    while True:
        page = (await api.get(path, params={"after_seq": after, "limit": limit})).json()
        pages.append(page)
        if page["next_after_seq"] is None:
            return pages
        assert page["next_after_seq"] == page[key][-1]["seq"]
        after = page["next_after_seq"]


async def test_the_journal_pages_by_seq_with_a_total_and_stays_stable_while_the_task_adds_calls(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    rt = Runtime(api_store)
    task = await rt.run(f"{FLOWS}:many_calls", {"count": 250, "steps": 2, "hold": True})
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, "message")
    path = f"/api/tasks/{task.id}/journal"

    first = (await api.get(path, params={"limit": 100})).json()
    held = first["total"]  # the first step's calls and the wait for the message
    await rt.send(task.id, "more", "go")
    assert (await rt.resume(task.id)).status is TaskStatus.COMPLETED
    rest = await _pages(api, path, "calls", 100, after=first["next_after_seq"])

    seqs = [call["seq"] for page in [first, *rest] for call in page["calls"]]
    total = await api_store.count_ops(task.id)
    assert seqs == sorted(set(seqs)) and len(seqs) == total  # each call once, in seq order, none left out
    assert [op.seq for op in await api_store.list_ops(task.id)] == seqs
    assert held < total == rest[-1]["total"] and first["total"] == held
    assert [len(page["calls"]) for page in [first, *rest]][:-1] == [100] * len(rest)
    assert {call["step"] for call in first["calls"][:5]} == {1}  # a call says its step, from 1
    assert "input" not in first["calls"][0]  # previews only, unless asked


async def test_the_last_page_says_there_is_none_after_it_even_when_full(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    task = await Runtime(api_store).run(f"{FLOWS}:many_calls", {"count": 40})
    total = await api_store.count_ops(task.id)

    whole = (await api.get(f"/api/tasks/{task.id}/journal", params={"limit": total})).json()
    short = (await api.get(f"/api/tasks/{task.id}/journal", params={"limit": total - 1})).json()

    assert (len(whole["calls"]), whole["next_after_seq"], whole["total"]) == (total, None, total)
    assert short["next_after_seq"] == short["calls"][-1]["seq"] == whole["calls"][-2]["seq"]
    assert (await api.get(f"/api/tasks/{task.id}/journal", params={"limit": 1001})).status_code == 422
    assert (await api.get("/api/tasks/nobody/journal")).status_code == 404


async def test_the_timeline_and_the_events_page_the_same_way(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    task = await Runtime(api_store).run(f"{FLOWS}:many_calls", {"count": 30, "steps": 3})

    timeline = await _pages(api, f"/api/tasks/{task.id}/timeline", "attempts", 7)
    events = await _pages(api, f"/api/tasks/{task.id}/events", "events", 4, after=0)

    attempts = [a for page in timeline for a in page["attempts"]]
    assert [a["seq"] for a in attempts] == [op.seq for op in await api_store.list_ops(task.id)]
    assert [a["step"] for a in attempts] == [1] * 10 + [2] * 10 + [3] * 10
    seqs = [e["seq"] for page in events for e in page["events"]]
    assert seqs == list(range(1, events[0]["total"] + 1)) and events[-1]["total"] == len(seqs)
    assert all(len(page["events"]) == 4 for page in events[:-1])


async def test_one_call_comes_whole_and_an_unknown_one_is_404(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    task = await Runtime(api_store).run(f"{FLOWS}:many_calls", {"count": 2, "payload": 5000})
    [listed] = (await api.get(f"/api/tasks/{task.id}/journal", params={"limit": 1})).json()["calls"]

    whole = (await api.get(f"/api/tasks/{task.id}/journal/{listed['seq']}")).json()
    missing = await api.get(f"/api/tasks/{task.id}/journal/999")

    assert len(listed["input_preview"]) == 200  # the list sends a preview
    assert whole["input"] == {"text": "x" * 5000, "nested": {"numbers": [1, 2, 3]}}
    assert whole["output"]["length"] == 5000 and whole["name"] == "echo"
    assert (missing.status_code, missing.json()) == (404, {"detail": f"task {task.id} has no call 999"})


async def test_a_checkpoint_gives_its_state_and_two_give_their_diff(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    task = await Runtime(api_store).run(f"{FLOWS}:travels", {"city": "Oslo"})
    base = f"/api/tasks/{task.id}"
    numbers = [c["checkpoint"] for c in (await api.get(f"{base}/checkpoints")).json()]
    first, last = numbers[0], numbers[-1]

    saved = (await api.get(f"{base}/checkpoints/{first}")).json()
    diff = (await api.get(f"{base}/state-diff", params={"from": first, "to": last})).json()
    same = (await api.get(f"{base}/state-diff", params={"from": last})).json()  # to the task as it is now

    assert saved["state"]["known_facts"] == [{"key": "city", "value": "Oslo", "source": "agent"}]
    assert [s["step"] for s in saved["steps"]] == [1]
    assert diff["known_facts"] == {
        "added": [{"key": "date", "value": "2030-05-01", "source": "agent"}],
        "removed": [],
        "changed": [{"key": "city", "from": "Oslo", "to": "OSLO"}],
    }
    assert diff["open_questions"] == {"added": [], "removed": ["which date?"]}
    assert diff["risk_flags"] == {"added": ["costly"], "removed": []}
    assert (diff["same"], same["same"]) == (False, True)
    assert (await api.get(f"{base}/state-diff", params={"from": 99})).status_code == 404
    assert (await api.get(f"{base}/checkpoints/99")).status_code == 404


async def test_a_fork_with_changed_inputs_runs_them_and_refuses_an_input_that_names_code(
    api: httpx.AsyncClient, api_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(api_store)
    task = await rt.run(f"{FLOWS}:travels", {"city": "Oslo"})
    [first, *_] = (await api.get(f"/api/tasks/{task.id}/checkpoints")).json()

    forked = await api.post(
        f"/api/tasks/{task.id}/fork",
        json={"checkpoint": first["checkpoint"], "inputs_json": '{"city": "Bergen"}'},
    )
    assert forked.status_code == 201, forked.text
    new_id = forked.json()["task_id"]
    done = await rt.resume(new_id)
    events = (await api.get(f"/api/tasks/{new_id}/events")).json()["events"]

    assert (done.status, done.result, done.forked_from) == (TaskStatus.COMPLETED, "going to Bergen", task.id)
    assert done.inputs_params["city"] == "Bergen"
    assert events[0]["kind"] == "task_forked" and events[0]["data"]["changed_inputs"] == ["city"]
    assert (await api_store.get_task(task.id)).inputs_params["city"] == "Oslo"  # the original as it was

    model = script({"plan": [plan("look")], "act": [say("looked")], "verify": [verdict(True)]})
    agent = await rt.run(Agent("helper", model=model), instruction="look around")
    spec = await api.post(f"/api/tasks/{agent.id}/fork", json={"checkpoint": 1, "inputs": {"agent": {}}})
    both = await api.post(
        f"/api/tasks/{task.id}/fork", json={"checkpoint": 1, "inputs": {"city": "A"}, "inputs_json": "{}"}
    )
    not_object = await api.post(f"/api/tasks/{task.id}/fork", json={"checkpoint": 1, "inputs_json": "[1]"})
    assert agent.status is TaskStatus.COMPLETED
    refusal = (
        f"input 'agent' names the code task {agent.id} runs; a fork can change its other inputs, not that one"
    )
    assert (spec.status_code, spec.json()["detail"]) == (400, refusal)
    assert (both.status_code, not_object.status_code) == (400, 400)
    assert "not both" in both.json()["detail"] and "JSON object" in not_object.json()["detail"]
    assert len(await api_store.list_tasks()) == 3  # the two runs and the one fork: a refused one made none


async def test_a_what_if_fork_from_a_step_takes_the_overrides_of_ratchet_fork(
    api: httpx.AsyncClient, api_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(api_store)
    model_a, model_b = script({}), script({})  # the workflow asks no model: any script will do
    task = await rt.run(f"{FLOWS}:travels", {"city": "Oslo"}, model=model_a)
    ops = await api_store.list_ops(task.id)

    forked = await api.post(
        f"/api/tasks/{task.id}/fork",
        json={
            "step": 2,
            "model": model_b,
            "instructions": "go north",
            "inputs": {"city": "Tromso"},
        },
    )
    not_a_tool = await api.post(f"/api/tasks/{task.id}/fork", json={"step": 2, "tool_results": {"0": 1}})
    neither = await api.post(f"/api/tasks/{task.id}/fork", json={"model": model_b})

    assert forked.status_code == 201, forked.text
    new_id = forked.json()["task_id"]
    assert forked.json() == {"task_id": new_id, "forked_from": task.id, "step": 2}
    new = await api_store.get_task(new_id)
    assert (new.model, new.instruction, new.inputs_params["city"]) == (
        model_b,
        "go north",
        "Tromso",
    )
    assert [op.seq for op in await api_store.list_ops(new_id)] == [
        op.seq for op in ops if op.meta.get("step") == 0
    ]
    [event] = await api_store.list_events(new_id, kinds={"task_forked"})
    assert event.data["overrides"] == {
        "model": {"from": model_a, "to": model_b},
        "instructions": {"from": task.instruction, "to": "go north"},
        "inputs": {"city": {"from": "Oslo", "to": "Tromso"}},
    }
    done = await rt.resume(new_id)
    assert (done.status, done.result) == (TaskStatus.COMPLETED, "going to Tromso")
    assert not_a_tool.status_code == 400 and "operation 0" in not_a_tool.json()["detail"]
    assert "not a tool call" in not_a_tool.json()["detail"]
    assert (neither.status_code, neither.json()["detail"]) == (
        400,
        "fork from one point: give a checkpoint or a step (each from 1)",
    )
    assert len(await api_store.list_tasks()) == 2  # the run and the one fork


async def test_the_tree_goes_to_any_depth_with_status_and_spending(
    api: httpx.AsyncClient, api_store: StateStore
) -> None:
    rt = Runtime(api_store)
    task = await rt.run(f"{FLOWS}:family", {"depth": 3, "width": 2})
    if task.status is not TaskStatus.COMPLETED:  # the children ran in this process: wait for them
        task = await rt.wait(task.id)

    found = (await api.get(f"/api/tasks/{task.id}/tree")).json()
    [child, _] = found["tree"]["children"]
    [grandchild, _] = child["children"]
    [leaf] = grandchild["children"]
    below = (await api.get(f"/api/tasks/{leaf['task_id']}/tree")).json()

    assert found["tasks"] == 1 + 2 + 4 + 4 and found["ancestors"] == []
    assert (child["name"], grandchild["name"], leaf["name"], leaf["status"]) == (
        "level 2",
        "level 1",
        "leaf",
        "completed",
    )
    assert set(leaf) >= {"llm_tokens", "cost", "unpriced_calls", "waiting_on", "more_children"}
    assert [a["task_id"] for a in below["ancestors"]] == [task.id, child["task_id"], grandchild["task_id"]]
    assert below["tree"]["children"] == []


async def test_the_models_a_task_used_are_counted_per_model(
    api: httpx.AsyncClient, api_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": [plan("look")], "act": [say("looked")], "verify": [verdict(True)]})
    agent = await Runtime(api_store).run(Agent("helper", model=model), instruction="look around")
    calls = [op for op in await api_store.list_ops(agent.id) if op.kind == "model"]

    found = (await api.get(f"/api/tasks/{agent.id}/models")).json()

    tokens = sum(op.meta["usage"]["prompt_tokens"] + op.meta["usage"]["completion_tokens"] for op in calls)
    assert found == {
        "task_model": model,
        "models": [
            {"model": model, "calls": len(calls), "llm_tokens": tokens, "cost": 0.0, "unpriced_calls": 0}
        ],
    }
    assert len(calls) == 3  # plan, act, verify
    assert (await api.get("/api/tasks/nobody/models")).status_code == 404

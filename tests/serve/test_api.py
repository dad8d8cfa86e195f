"""The HTTP API against the real app on SQLite and PostgreSQL: the CLI's records, the same decisions."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import JsonValue

from ratchet import Worker
from ratchet.records import TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore
from ratchet.views.record_json import task_json, task_view_json
from ratchet.views.task import load_task_view

from ..engine.flows import FLOWS, entries
from ..engine.support import leave_in_flight
from ..helpers.builders import make_op
from ..helpers.people_flows import asks, mail, sends
from .support import JSON


async def _waiting_for_approval(rt: Runtime, ledger: str, **inputs: JsonValue) -> str:
    task = await rt.run(mail, {"ledger": ledger, **inputs})
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL), task.error
    return task.id


async def test_a_task_is_listed_and_shown_with_the_keys_of_the_cli_json(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await _waiting_for_approval(api_rt, ledger)

    listed = (await api.get("/api/tasks", params={"status": "waiting", "agent": "mail"})).json()
    shown = (await api.get(f"/api/tasks/{task_id}")).json()

    task = await api_store.get_task(task_id)
    async with api_store.reading() as tx:
        view = await load_task_view(tx, task_id)
    assert listed["tasks"] == [task_json(task)] and listed["total"] == 1 and listed["next_offset"] is None
    assert shown == task_view_json(view)
    assert shown["pending_approvals"][0]["tool"] == "send"
    assert (await api.get("/api/tasks", params={"status": "completed"})).json()["tasks"] == []
    assert (await api.get("/api/tasks", params={"parent": "nobody"})).json()["total"] == 0


async def test_tasks_are_paged(api: httpx.AsyncClient, api_rt: Runtime, ledger: str) -> None:
    ids = [await api_rt.submit(mail, {"ledger": ledger}, task_id=f"t{n}") for n in range(5)]

    first = (await api.get("/api/tasks", params={"limit": 2})).json()
    last = (await api.get("/api/tasks", params={"limit": 2, "offset": 4})).json()

    assert [t["task_id"] for t in first["tasks"]] == ids[:2] and first["next_offset"] == 2
    assert [t["task_id"] for t in last["tasks"]] == ids[4:] and last["next_offset"] is None
    after = (await api.get("/api/tasks", params={"created_after": "2999-01-01T00:00:00Z"})).json()
    assert after["total"] == 0


async def test_an_approval_with_edited_arguments_runs_the_edited_call_once(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await _waiting_for_approval(api_rt, ledger)
    assert [a["task_id"] for a in (await api.get("/api/approvals")).json()] == [task_id]

    approved = await api.post(
        f"/api/tasks/{task_id}/approve", json={"edit_args": {"ledger": ledger, "to": "edited@example.com"}}
    )
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert approved.status_code == 200, approved.text
    assert (await api_store.get_task(task_id)).status is TaskStatus.COMPLETED
    assert [s["to"] for s in sends(ledger)] == ["edited@example.com"]
    [call] = (await api.get(f"/api/tasks/{task_id}/journal")).json()["calls"]
    assert (call["kind"], call["name"], call["status"], call["attempt"]) == ("tool", "send", "succeeded", 1)
    assert call["idempotency_key"] == f"{task_id}:{call['seq']}"
    assert "edited@example.com" in call["input_preview"] and call["duration_seconds"] >= 0
    assert "input" not in call
    full = (await api.get(f"/api/tasks/{task_id}/journal", params={"full": "true"})).json()["calls"]
    assert full[0]["input"]["to"] == "edited@example.com"
    assert (await api.get("/api/approvals")).json() == []
    steps = (await api.get(f"/api/tasks/{task_id}/steps")).json()
    assert [(s["step"], s["status"]) for s in steps] == [(1, "completed")]


async def test_a_denied_call_does_not_run_and_a_second_decision_is_refused(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await _waiting_for_approval(api_rt, ledger)

    denied = await api.post(f"/api/tasks/{task_id}/deny", json={"reason": "not today"})
    again = await api.post(f"/api/tasks/{task_id}/approve", json={})
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert denied.status_code == 200
    assert again.status_code == 409, again.text
    assert "send (operation 0)" in again.json()["detail"] and "denied already" in again.json()["detail"]
    assert "(not today); nothing was changed" in again.json()["detail"]
    assert sends(ledger) == []
    assert (await api_store.get_task(task_id)).status is TaskStatus.COMPLETED
    ended = await api.post(f"/api/tasks/{task_id}/approve", json={})
    assert ended.status_code == 400 and "is completed, not waiting for an approval" in ended.json()["detail"]


async def test_an_approved_call_no_worker_ran_yet_is_shown_as_next_and_not_approved_twice(
    api: httpx.AsyncClient, api_store: StateStore, api_rt: Runtime, ledger: str
) -> None:
    task_id = await _waiting_for_approval(api_rt, ledger)
    assert (await api.get(f"/api/tasks/{task_id}")).json()["next"] is None  # it waits for a person

    approved = await api.post(f"/api/tasks/{task_id}/approve", json={})
    shown = (await api.get(f"/api/tasks/{task_id}")).json()
    again = await api.post(f"/api/tasks/{task_id}/approve", json={"seq": 0})

    assert approved.status_code == 200 and approved.json()["waiting_on"] == "timer"
    decided = shown["decided_approval"]
    assert (decided["seq"], decided["tool"], decided["status"]) == (0, "send", "approved")
    assert shown["next"] == (
        f"Approved at {_utc(decided['decided_at'])}: send "
        f'{{"ledger": "{ledger}", "to": "ops@example.com"}} (operation 0); it has not run yet. '
        f"It runs when a running `ratchet worker` picks the task up, or now with `ratchet resume {task_id}`."
    )
    assert again.status_code == 409, again.text
    assert again.json()["detail"] == (
        f"send (operation 0) of task {task_id} was approved already, at {_utc(decided['decided_at'])}; "
        f"nothing was changed: the call runs when a running `ratchet worker` picks the task up, "
        f"or with `ratchet resume {task_id}`"
    )
    assert (await api.get(f"/api/tasks/{task_id}/approvals")).json() == [decided]
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)
    done = (await api.get(f"/api/tasks/{task_id}")).json()
    assert (done["task"]["status"], done["next"], done["decided_approval"]) == ("completed", None, None)
    assert len(sends(ledger)) == 1


def _utc(iso: str) -> str:
    """An ISO time of the API as the sentences write it: ``2026-05-04 12:00:00 UTC``."""
    return f"{dt.datetime.fromisoformat(iso).astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"


async def test_a_question_is_answered(api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore) -> None:
    task = await api_rt.run(asks)
    assert task.waiting_on is WaitReason.INPUT

    assert (await api.get(f"/api/tasks/{task.id}")).json()["question"] == "Which region?"
    answered = await api.post(f"/api/tasks/{task.id}/answer", json={"text": "eu-west"})
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert answered.status_code == 200
    result = (await api_store.get_task(task.id)).result
    assert isinstance(result, dict) and result["answer"] == "eu-west"


async def test_cancel_retry_resume_and_messages(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await api_rt.submit(mail, {"ledger": ledger})

    sent = await api.post(f"/api/tasks/{task_id}/messages", json={"name": "go", "payload": {"n": 1}})
    resumed = await api.post(f"/api/tasks/{task_id}/resume", headers=JSON)
    cancelled = await api.post(f"/api/tasks/{task_id}/cancel", json={"reason": "changed my mind"})
    again = await api.post(f"/api/tasks/{task_id}/cancel", headers=JSON)
    resume_ended = await api.post(f"/api/tasks/{task_id}/resume", headers=JSON)
    retried = await api.post(f"/api/tasks/{task_id}/retry", headers=JSON)

    assert sent.status_code == 201 and sent.json()["name"] == "go"
    assert [m["payload"] for m in (await api.get(f"/api/tasks/{task_id}/messages")).json()] == [{"n": 1}]
    assert resumed.status_code == 200
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["error"] == "changed my mind"
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]
    assert resume_ended.status_code == 409
    assert retried.status_code == 201 and retried.json()["forked_from"] == task_id


async def test_bad_input_is_a_4xx_with_one_line(api: httpx.AsyncClient, api_rt: Runtime, ledger: str) -> None:
    task_id = await _waiting_for_approval(api_rt, ledger)

    unknown = await api.get("/api/tasks/nope")
    bad_json = await api.post(f"/api/tasks/{task_id}/deny", content=b"{not json", headers=JSON)
    wrong_state = await api.post(f"/api/tasks/{task_id}/answer", json={"text": "x"})
    no_checkpoint = await api.post(f"/api/tasks/{task_id}/fork", json={"checkpoint": 99})
    not_in_doubt = await api.post(f"/api/tasks/{task_id}/in-doubt/0", json={"action": "skip"})
    bad_status = await api.get("/api/tasks", params={"status": "sleeping"})

    assert (unknown.status_code, unknown.json()) == (404, {"detail": unknown.json()["detail"]})
    assert "nope" in unknown.json()["detail"]
    assert bad_json.status_code == 422 and bad_json.json() == {"detail": "the body is not valid JSON"}
    assert wrong_state.status_code == 400
    assert no_checkpoint.status_code == 404
    assert not_in_doubt.status_code == 400
    assert bad_status.status_code == 400  # the filter parser `ratchet tasks` shares: one line, its words
    for answer in (unknown, bad_json, wrong_state, no_checkpoint, not_in_doubt, bad_status):
        assert list(answer.json()) == ["detail"] and "\n" not in answer.json()["detail"]


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        ({"max_tokens": 10**30}, "max_tokens: Input should be less than or equal to 2147483647"),
        ({"max_steps": 10**30}, "max_steps: Input should be less than or equal to"),
        ({"priority": 10**30}, "priority: Input should be less than or equal to 9"),
        ({"max_steps": 1.5}, "max_steps: Input should be a valid integer"),
    ],
)
async def test_a_number_out_of_range_is_a_422_in_one_line_and_nothing_is_queued(
    api: httpx.AsyncClient,
    api_store: StateStore,
    script: Callable[[dict[str, Any]], str],
    number: dict[str, object],
    expected: str,
) -> None:
    model = script({"plan": [], "act": [], "verify": []})

    refused = await api.post("/api/tasks", json={"instruction": "Say hi", "model": model, **number})

    assert refused.status_code == 422, refused.text
    assert list(refused.json()) == ["detail"] and "\n" not in refused.json()["detail"]
    assert expected in refused.json()["detail"]
    assert await api_store.list_tasks() == []


async def test_schedules_show_their_zone_overlap_and_pause(
    api: httpx.AsyncClient, api_rt: Runtime, ledger: str
) -> None:
    paris = await api_rt.schedule(
        mail, {"ledger": ledger}, every="@daily", tz="Europe/Paris", overlap="allow"
    )
    utc = await api_rt.schedule(mail, {"ledger": ledger}, every="0 9 * * *")
    await api_rt.pause_schedule(str(utc.payload["id"]))

    first, second = (await api.get("/api/schedules")).json()

    assert (first["schedule_id"], first["tz"], first["overlap"], first["paused"]) == (
        paris.payload["id"],
        "Europe/Paris",
        "allow",
        False,
    )
    assert first["next_due"] == paris.fire_at.isoformat() and first["every"] == "@daily"
    assert (second["schedule_id"], second["tz"], second["overlap"]) == (utc.payload["id"], "UTC", "skip")
    assert (second["paused"], second["next_due"], second["last_task"]) == (True, None, None)


async def test_schedules_are_paused_resumed_and_triggered(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    queued = await api_rt.schedule(mail, {"ledger": ledger}, every="0 9 * * *", schedule_id="daily")

    paused = await api.post("/api/schedules/daily/pause", headers=JSON)
    triggered = await api.post("/api/schedules/daily/trigger", headers=JSON)
    resumed = await api.post("/api/schedules/daily/resume", headers=JSON)

    assert paused.status_code == 200 and (paused.json()["paused"], paused.json()["next_due"]) == (True, None)
    assert triggered.status_code == 201
    task_id = triggered.json()["task_id"]
    assert (await api_store.get_task(task_id)).id.startswith("daily-")
    assert resumed.json()["next_due"] == queued.fire_at.isoformat()
    assert resumed.json()["last_task"] == task_id and resumed.json()["paused"] is False
    for action in ("pause", "resume", "trigger"):
        missing = await api.post(f"/api/schedules/nope/{action}", headers=JSON)
        assert missing.status_code == 404 and "no schedule 'nope'" in missing.json()["detail"]


async def test_sessions_schedules_workers_health_and_ready(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    trigger = await api_rt.schedule(mail, {"ledger": ledger}, every="0 9 * * *")
    task_id = await api_rt.submit(mail, {"ledger": ledger})
    lease = await api_store.claim_lease(task_id, "worker-a", 60, host="h1", pid=42)
    assert lease is not None

    [schedule] = (await api.get("/api/schedules")).json()
    [worker] = (await api.get("/api/workers")).json()

    assert schedule["schedule_id"] == trigger.payload["id"] and schedule["every"] == "0 9 * * *"
    assert (worker["worker"], worker["host"], worker["pid"], worker["live"]) == ("worker-a", "h1", 42, True)
    assert [held["task_id"] for held in worker["leases"]] == [task_id]
    assert (await api.get(f"/api/tasks/{task_id}/leases")).json()[0]["owner"] == "worker-a"
    assert (await api.get("/api/sessions")).json() == []
    assert (await api.get("/api/health")).json() == {"status": "ok"}
    ready = await api.get("/api/ready")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert (await api.get("/api/openapi.json")).json()["info"]["title"] == "Ratchet"
    scraped = await api.get("/metrics")
    assert scraped.status_code == 200
    assert 'ratchet_tasks{status="queued"} 1.0' in scraped.text  # the submitted task, read at the scrape
    assert "/metrics" not in (await api.get("/api/openapi.json")).json()["paths"]


async def test_a_resumed_task_goes_to_a_worker_and_a_call_in_doubt_is_settled_with_a_result(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await api_rt.submit(
        f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "plain_crash"}, queue=False
    )
    args = {"ledger": ledger, "label": "plain_crash"}
    await leave_in_flight(api_store, task_id, make_op(task_id, 0, name="plain_crash", input=args))

    resumed = await api.post(f"/api/tasks/{task_id}/resume", headers=JSON)
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)
    [in_doubt] = (await api.get(f"/api/tasks/{task_id}/in-doubt")).json()
    settled = await api.post(
        f"/api/tasks/{task_id}/in-doubt/0", json={"action": "result", "result": {"ran": "by hand"}}
    )
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert resumed.status_code == 200, resumed.text
    assert (in_doubt["seq"], in_doubt["name"], in_doubt["status"]) == (0, "plain_crash", "started")
    assert settled.status_code == 200, settled.text
    done = await api_store.get_task(task_id)
    assert (done.status, done.result) == (TaskStatus.COMPLETED, {"ran": "by hand"})
    assert entries(ledger, "plain_crash") == []  # nothing ran it again


async def test_a_task_held_by_a_live_worker_is_not_resumed(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await api_rt.submit(mail, {"ledger": ledger}, queue=False)
    assert await api_store.claim_lease(task_id, "busy-worker", 60) is not None

    refused = await api.post(f"/api/tasks/{task_id}/resume", headers=JSON)

    assert refused.status_code == 409 and "busy-worker" in refused.json()["detail"]


async def test_a_submitted_agent_task_is_queued_and_a_worker_completes_it(
    api: httpx.AsyncClient, api_store: StateStore, script: Callable[[dict[str, Any]], str], tmp_path: Path
) -> None:
    model = script(
        {
            "plan": [
                {"content": {"goal": "say hi", "steps": [{"step_name": "hi", "description": "say hi"}]}}
            ],
            "act": [{"content": "hi"}],
            "verify": [{"content": {"passed": True, "reason": "ok"}}],
        }
    )
    outside = tmp_path / "elsewhere_tools.py"  # outside what the server admits: never loaded
    outside.write_text("import ratchet\n\n@ratchet.tool\ndef hello() -> str:\n    return 'hi'\n")

    submitted = await api.post(
        "/api/tasks", json={"instruction": "Say hi", "model": model, "name": "greeter"}
    )
    no_model = await api.post("/api/tasks", json={"instruction": "Say hi"})
    blank = await api.post("/api/tasks", json={"instruction": "  ", "model": model})
    refused_tools = await api.post(
        "/api/tasks", json={"instruction": "x", "model": model, "tools": [str(outside)]}
    )
    nul_tools = await api.post("/api/tasks", json={"instruction": "x", "model": model, "tools": ["t\x00.py"]})
    # Importing it would open a web browser on the server: a module of Python itself is never tools.
    acting_module = await api.post(
        "/api/tasks", json={"instruction": "x", "model": model, "tools": ["antigravity"]}
    )
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert submitted.status_code == 201, submitted.text
    task = submitted.json()
    assert (task["name"], task["status"], task["agent"]) == ("greeter", "queued", "agent")
    assert (await api_store.get_task(task["task_id"])).status is TaskStatus.COMPLETED
    assert no_model.status_code == 400 and "RATCHET_MODEL" in no_model.json()["detail"]
    assert blank.status_code == 400 and "instruction" in blank.json()["detail"]
    assert refused_tools.status_code == 400, refused_tools.text
    assert "is outside the project root" in refused_tools.json()["detail"]
    assert nul_tools.status_code == 400 and "NUL character" in nul_tools.json()["detail"], nul_tools.text
    assert acting_module.status_code == 400, acting_module.text
    assert "a module of Python itself" in acting_module.json()["detail"]
    assert "antigravity" not in sys.modules


async def test_a_submitted_task_keeps_its_queue_and_partition(
    api: httpx.AsyncClient, api_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": []})
    body = {"instruction": "send the digest", "model": model}

    queued = await api.post("/api/tasks", json={**body, "queue": "emails", "partition": "tenant-42"})
    orphan = await api.post("/api/tasks", json={**body, "partition": "tenant-42"})
    spaced = await api.post("/api/tasks", json={**body, "queue": "two words"})

    assert queued.status_code == 201, queued.text
    task = await api_store.get_task(queued.json()["task_id"])
    assert (task.queue, task.partition) == ("emails", "tenant-42")
    assert orphan.status_code == 400 and "give the queue too" in orphan.json()["detail"]
    assert spaced.status_code == 400 and "the queue 'two words' is not a name" in spaced.json()["detail"]
    assert len(await api_store.list_tasks()) == 1

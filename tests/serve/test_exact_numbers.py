"""Integers beyond a double's 53 bits through the HTTP API (SQLite, PostgreSQL): shown, typed, run exactly.

A browser reads a JSON number as a double, so the dashboard shows an
approval's ``arguments_json`` (the server's own text of the arguments) and
sends what a person types as text (``edit_args_json``, ``result_json``) for
the server to read with Python's JSON reader. These check that contract
without a browser; tests/security/test_big_integers.py drives the page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from ratchet import Context, Worker, tool, workflow
from ratchet.records import TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore
from ratchet.tools import ToolContext

from ..engine.flows import FLOWS
from ..engine.support import leave_in_flight
from ..helpers.builders import make_op

BIG = 2**53 + 1  # 9007199254740993: a double holds 9007199254740992 or ...994, never this
MEMO = "refund\u202e\x1b[2J"  # a bidirectional override and an escape sequence: shown as escapes


def paid(ledger: str) -> list[dict[str, Any]]:
    """What `pay` was given, call by call."""
    path = Path(ledger)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@tool(risk="external_action")
def pay(ctx: ToolContext, ledger: str, amount: int, memo: str = "") -> dict[str, Any]:
    """Pay `amount` (an external effect: each call waits for a person's approval)."""
    with Path(ledger).open("a") as out:
        out.write(json.dumps({"amount": amount, "memo": memo}) + "\n")
    return {"paid": amount}


@workflow(tools=[pay])
async def pays(ctx: Context, ledger: str, amount: int, memo: str = "", times: int = 1) -> None:
    """Pay `amount` `times` times, one step each."""
    for n in range(times):
        async with ctx.step(f"pay {n + 1}"):
            await ctx.call_tool("pay", {"ledger": ledger, "amount": amount, "memo": memo})


async def _waiting(rt: Runtime, ledger: str, **inputs: Any) -> str:
    task = await rt.run(pays, {"ledger": ledger, "amount": BIG, "memo": MEMO, **inputs})
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL), task.error
    return task.id


async def test_an_approval_shows_its_arguments_as_text_that_reads_back_to_exactly_them(
    api: httpx.AsyncClient, api_rt: Runtime, ledger: str
) -> None:
    task_id = await _waiting(api_rt, ledger)

    [listed] = (await api.get("/api/approvals")).json()
    [pending] = (await api.get(f"/api/tasks/{task_id}")).json()["pending_approvals"]

    assert listed == pending
    text = pending["arguments_json"]
    assert json.loads(text) == pending["arguments"] == {"ledger": ledger, "amount": BIG, "memo": MEMO}
    assert f'"amount": {BIG},' in text  # the digits in full, indented by two as people read it
    assert "\u202e" not in text and "\x1b" not in text and "\\u202e\\u001b[2J" in text
    assert pending["edited_arguments_json"] is None


async def test_arguments_typed_as_text_run_exactly_as_typed(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(api_rt, ledger)
    typed = f'{{"ledger": {json.dumps(ledger)}, "amount": -18446744073709551617, "memo": "typed"}}'

    approved = await api.post(f"/api/tasks/{task_id}/approve", json={"edit_args_json": typed})
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert approved.status_code == 200, approved.text
    assert paid(ledger) == [{"amount": -18446744073709551617, "memo": "typed"}]
    [decided] = (await api.get(f"/api/tasks/{task_id}/approvals")).json()
    assert decided["edited_arguments"] == json.loads(typed)
    assert json.loads(decided["edited_arguments_json"]) == json.loads(typed)


async def test_text_that_is_not_one_exact_json_object_is_refused_in_one_line(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(api_rt, ledger)
    refused = {
        "{not json": "must be JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        "[1, 2]": "must be a JSON object",
        '{"amount": NaN}': "which has no NaN",
        '{"amount": 1e400}': "too large for a float",
        '{"amount": 1, "amount": 2}': '"amount" comes twice',
        "[" * 100_000: "nested less deeply",
        '{"amount": %s}' % ("9" * 5000): "at most 4300 digits",
        '{"memo": "\\ud800"}': "not a lone surrogate (\\ud800)",
    }

    answers = {
        text: await api.post(f"/api/tasks/{task_id}/approve", json={"edit_args_json": text})
        for text in refused
    }
    both = await api.post(
        f"/api/tasks/{task_id}/approve", json={"edit_args": {"amount": 1}, "edit_args_json": "{}"}
    )

    for text, expected in refused.items():
        answer = answers[text]
        assert answer.status_code == 400 and list(answer.json()) == ["detail"], answer.text
        assert expected in answer.json()["detail"] and "\n" not in answer.json()["detail"]
    assert both.status_code == 400 and "not both" in both.json()["detail"]
    task = await api_store.get_task(task_id)
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
    assert paid(ledger) == []


async def test_a_decision_on_a_call_no_longer_waiting_decides_nothing(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(api_rt, ledger, times=2)
    [first] = (await api.get(f"/api/tasks/{task_id}/approvals")).json()
    assert (await api.post(f"/api/tasks/{task_id}/approve", json={"seq": first["seq"]})).status_code == 200
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    # A page still showing the first call: its buttons name that call, now decided.
    stale_approve = await api.post(f"/api/tasks/{task_id}/approve", json={"seq": first["seq"]})
    stale_deny = await api.post(f"/api/tasks/{task_id}/deny", json={"seq": first["seq"], "reason": "no"})

    for answer in (stale_approve, stale_deny):
        assert answer.status_code == 400, answer.text
        assert f"not {first['seq']}; nothing was decided" in answer.json()["detail"]
    [_, second] = (await api.get(f"/api/tasks/{task_id}/approvals")).json()
    assert second["status"] == "pending" and len(paid(ledger)) == 1


async def test_a_result_typed_as_text_is_recorded_exactly(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task_id = await api_rt.submit(
        f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "plain_crash"}, queue=False
    )
    args = {"ledger": ledger, "label": "plain_crash"}
    await leave_in_flight(api_store, task_id, make_op(task_id, 0, name="plain_crash", input=args))
    await api.post(f"/api/tasks/{task_id}/resume", json={})
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    both = await api.post(
        f"/api/tasks/{task_id}/in-doubt/0", json={"action": "result", "result": 1, "result_json": "1"}
    )
    not_json = await api.post(
        f"/api/tasks/{task_id}/in-doubt/0", json={"action": "result", "result_json": "{"}
    )
    settled = await api.post(
        f"/api/tasks/{task_id}/in-doubt/0", json={"action": "result", "result_json": f'{{"ran": [{BIG}]}}'}
    )
    await Worker(api_store, poll_interval=0.01).run(until_idle=True)

    assert both.status_code == 400 and "not both" in both.json()["detail"]
    assert not_json.status_code == 400 and "the result must be JSON" in not_json.json()["detail"]
    assert settled.status_code == 200, settled.text
    done = await api_store.get_task(task_id)
    assert (done.status, done.result) == (TaskStatus.COMPLETED, {"ran": [BIG]})

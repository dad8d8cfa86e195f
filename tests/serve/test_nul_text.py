"""A NUL character in a text the store keeps as text is one line of bad input on every store.

PostgreSQL's text cannot hold U+0000 where SQLite's can: a task's name, a
deny or cancel reason, an answer holding one is refused with 400 on both,
and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from ratchet.records import ApprovalStatus, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.people_flows import asks, mail

NUL = "no\x00pe"


def _refused(answer: httpx.Response, what: str) -> None:
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith(f"{what} holds a NUL character") and "\n" not in detail, detail


async def test_a_deny_or_cancel_reason_holding_a_nul_is_refused_and_nothing_changes(
    api: httpx.AsyncClient, api_rt: Runtime, api_store: StateStore, ledger: str
) -> None:
    task = await api_rt.run(mail, {"ledger": ledger})
    assert task.waiting_on is WaitReason.APPROVAL

    denied = await api.post(f"/api/tasks/{task.id}/deny", json={"reason": NUL})
    cancelled = await api.post(f"/api/tasks/{task.id}/cancel", json={"reason": NUL})

    _refused(denied, "the reason")
    _refused(cancelled, "the reason")
    after = await api_store.get_task(task.id)
    assert (after.status, after.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
    [approval] = await api_store.list_approvals(task.id)
    assert approval.status is ApprovalStatus.PENDING


async def test_an_answer_holding_a_nul_is_refused(api: httpx.AsyncClient, api_rt: Runtime) -> None:
    task = await api_rt.run(asks, {})
    assert task.waiting_on is WaitReason.INPUT

    _refused(await api.post(f"/api/tasks/{task.id}/answer", json={"text": NUL}), "the answer")
    assert (await api_rt.store.get_task(task.id)).waiting_on is WaitReason.INPUT


async def test_a_task_name_holding_a_nul_is_refused_and_no_task_is_made(
    api: httpx.AsyncClient, api_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"act": [{"content": "done"}]})

    submitted = await api.post("/api/tasks", json={"instruction": "x", "model": model, "name": NUL})

    _refused(submitted, "the task's name")
    assert await api_store.list_tasks() == []

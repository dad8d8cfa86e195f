"""Notes: messages named `note` reach an agent as a user message at its next act turn, and can replan."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Runtime, StepStatus, TaskStatus, WaitReason
from ratchet.records import OpKind
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan, plan_step, say, verdict
from .support import events_of, make_agent, model_ops, request_messages, run_agent

QUESTION = "Which region should X be deployed to?"
NOTE = "the team moved X to eu-central-1 yesterday"


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _script(replan: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "plan": [plan("ask where", "deploy X", "tell the team")],
        "act": [calls(("ask_user", {"question": QUESTION})), say("asked"), say("deployed"), say("told")],
        "verify": [verdict(True)] * 3,
        "replan": replan,
    }


async def test_a_note_sent_while_the_task_waits_reaches_the_next_turn_and_replans(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    new_steps = {"content": {"steps": [plan_step("deploy X to eu-central-1"), plan_step("tell the team")]}}
    waiting = await run_agent(rt, make_agent(script(_script([new_steps]))))
    assert waiting.waiting_on is WaitReason.INPUT, waiting.error

    await rt.send(waiting.id, "note", NOTE)
    await rt.answer(waiting.id, "eu-west-1")
    task = await rt.resume(waiting.id)

    assert task.status is TaskStatus.COMPLETED, task.error
    second = (await model_ops(store, task.id, "act"))[1]  # the turn after the question's answer
    told = request_messages(second)[-1]
    assert told["role"] == "user" and NOTE in told["content"]
    (replanned,) = await events_of(store, task.id, "replanned")
    assert isinstance(replanned.data["reason"], str)
    assert replanned.data["trigger"] == "news" and f"a note arrived: {NOTE}" in replanned.data["reason"]
    assert [(s.name, s.status) for s in await store.list_steps(task.id)][1:] == [
        ("deploy X to eu-central-1", StepStatus.COMPLETED),
        ("tell the team", StepStatus.COMPLETED),
    ]
    receives = [op for op in await store.list_ops(task.id) if op.kind is OpKind.RECEIVE]
    assert [(op.name, op.output) for op in receives] == [("note", [NOTE])]  # taken once, journaled once
    assert await store.list_inbox(task.id, pending_only=True) == []


async def test_a_note_sent_before_the_start_is_in_the_first_turn_and_replans_nothing_when_told_not_to(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X")],
                "act": [say("looked"), say("restarted")],
                "verify": [verdict(True), verdict(True)],
            }
        ),
        replan_on=(),
    )
    task_id = await rt.submit(agent, instruction="X is slow", queue=False)
    await rt.send(task_id, "note", {"hint": "check the cache first"})

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    first, second = await model_ops(store, task.id, "act")
    assert '{"hint": "check the cache first"}' in request_messages(first)[-1]["content"]
    assert "note" not in request_messages(second)[-1]["content"]
    assert await model_ops(store, task.id, "replan") == []

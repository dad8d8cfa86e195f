"""Replans the model asks for, and replans new information brings; the plan is changed only by replanning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Runtime, StepStatus, TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan, plan_step, say, verdict
from .support import events_of, make_agent, model_ops, run_agent


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """These behaviours on the reference store and on a file store."""
    return str(request.param)


def _new_steps(*names: str) -> dict[str, Any]:
    return {"content": {"steps": [plan_step(name) for name in names]}}


ASKS_FOR_A_REPLAN: dict[str, Any] = {
    "plan": [plan("look at X", "restart X", "tell the team")],
    "act": [
        say("X runs out of memory"),
        calls(("replan", {"reason": "a restart will not help: X needs more memory"})),
        say("memory raised"),
        say("team told"),
    ],
    "verify": [verdict(True)] * 3,
    "replan": [_new_steps("raise X's memory", "tell the team")],
}


async def test_the_model_asks_for_a_replan_and_the_abandoned_step_keeps_its_record(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(ASKS_FOR_A_REPLAN)))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "team told"
    steps = await store.list_steps(task.id)
    assert [(s.index, s.name, s.status, s.failure_message) for s in steps] == [
        (0, "look at X", StepStatus.COMPLETED, None),
        (1, "restart X", StepStatus.CANCELLED, "abandoned: a restart will not help: X needs more memory"),
        (2, "raise X's memory", StepStatus.COMPLETED, None),
        (3, "tell the team", StepStatus.COMPLETED, None),
    ]
    assert task.state.plan == [s.name for s in steps]  # one plan: the steps'
    (replanned,) = await events_of(store, task.id, "replanned")
    assert replanned.data["trigger"] == "agent" and replanned.data["index"] == 2
    (request,) = await model_ops(store, task.id, "replan")
    system = request.input["messages"][0]["content"]
    assert "X needs more memory" in system and "Completed steps (kept as they are): look at X" in system
    assert "X runs out of memory" in system  # what the completed step found
    assert len(await model_ops(store, task.id, "verify")) == 3  # the abandoned step is not checked


async def test_a_replan_the_model_asks_for_after_the_last_one_allowed_is_refused_and_the_step_goes_on(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                **ASKS_FOR_A_REPLAN,
                "act": [say("looked"), calls(("replan", {"reason": "?"})), say("restarted"), say("told")],
            }
        ),
        max_replans=0,
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.name for s in await store.list_steps(task.id)] == ["look at X", "restart X", "tell the team"]
    assert await model_ops(store, task.id, "replan") == []
    after = (await model_ops(store, task.id, "act"))[2]
    assert "the most allowed" in after.input["messages"][-1]["content"]


async def test_a_replan_the_model_asks_for_that_gives_no_plan_keeps_the_plan_and_the_step_goes_on(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                **ASKS_FOR_A_REPLAN,
                "act": [say("looked"), calls(("replan", {"reason": "?"})), say("restarted"), say("told")],
                "replan": [{"content": "no idea"}],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    steps = await store.list_steps(task.id)
    assert [(s.name, s.status) for s in steps] == [
        ("look at X", StepStatus.COMPLETED),
        ("restart X", StepStatus.COMPLETED),
        ("tell the team", StepStatus.COMPLETED),
    ]
    assert len(await events_of(store, task.id, "replan_rejected")) == 1
    after = (await model_ops(store, task.id, "act"))[2]
    assert after.input["messages"][-1]["content"].startswith("error: no valid new plan came back")


QUESTION = "Which region should X be deployed to?"


def _asks(replan: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "plan": [plan("ask where", "deploy X", "tell the team")],
        "act": [calls(("ask_user", {"question": QUESTION})), say("asked"), say("deployed"), say("told")],
        "verify": [verdict(True)] * 3,
        "replan": replan,
    }


async def test_an_answered_question_replans_the_steps_not_started_yet(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    agent = make_agent(script(_asks([_new_steps("deploy X to eu-west-1", "tell the team")])))
    waiting = await run_agent(rt, agent)
    assert waiting.waiting_on is WaitReason.INPUT, waiting.error
    await rt.answer(waiting.id, "eu-west-1")
    task = await rt.resume(waiting.id)

    assert task.status is TaskStatus.COMPLETED, task.error
    steps = await store.list_steps(task.id)
    assert [(s.index, s.name, s.status) for s in steps] == [
        (0, "ask where", StepStatus.COMPLETED),
        (1, "deploy X to eu-west-1", StepStatus.COMPLETED),
        (2, "tell the team", StepStatus.COMPLETED),
    ]
    (replanned,) = await events_of(store, task.id, "replanned")
    assert replanned.data["trigger"] == "news"
    assert f"the person answered {QUESTION!r}: eu-west-1" in replanned.message
    (request,) = await model_ops(store, task.id, "replan")
    assert "eu-west-1" in request.input["messages"][0]["content"]


async def test_answers_replan_nothing_when_the_agent_says_so(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    waiting = await run_agent(rt, make_agent(script(_asks([])), replan_on=()))
    await rt.answer(waiting.id, "eu-west-1")
    task = await rt.resume(waiting.id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.name for s in await store.list_steps(task.id)] == ["ask where", "deploy X", "tell the team"]
    assert await model_ops(store, task.id, "replan") == []


def _learns(replan: list[dict[str, Any]]) -> dict[str, Any]:
    fact = {"ops": [{"op": "append_facts", "facts": [{"key": "region", "value": "eu-west-1"}]}]}
    return {
        "plan": [plan("look at X", "deploy X")],
        "act": [calls(("update_state", fact)), say("X lives in eu-west-1"), say("deployed")],
        "verify": [verdict(True)] * 2,
        "replan": replan,
    }


async def test_a_new_fact_replans_only_when_the_agent_asks_for_facts(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    quiet = await run_agent(Runtime(store), make_agent(script(_learns([]))))
    assert quiet.status is TaskStatus.COMPLETED, quiet.error
    assert await model_ops(store, quiet.id, "replan") == []

    agent = make_agent(script(_learns([_new_steps("deploy X to eu-west-1")])), replan_on=("facts",))
    task = await run_agent(Runtime(store), agent)
    assert task.status is TaskStatus.COMPLETED, task.error
    assert [s.name for s in await store.list_steps(task.id)] == ["look at X", "deploy X to eu-west-1"]
    (replanned,) = await events_of(store, task.id, "replanned")
    assert 'new fact region: "eu-west-1"' in replanned.message


async def test_update_state_may_not_replace_the_plan_the_model_is_told_to_replan(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    patch = {
        "ops": [
            {"op": "append_facts", "facts": [{"key": "k", "value": 1}]},
            {"op": "replace_plan", "plan": ["something else"]},
        ]
    }
    agent = make_agent(
        script({"plan": [plan("restart X", check="")], "act": [calls(("update_state", patch)), say("done")]})
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.state.plan == ["restart X"] == [s.name for s in await store.list_steps(task.id)]
    assert task.state.known_facts == []  # nothing of the refused patch applied
    _, second = await model_ops(store, task.id, "act")
    reply = second.input["messages"][-1]["content"]
    assert reply.startswith("error: the plan is not changed with update_state") and "call replan" in reply

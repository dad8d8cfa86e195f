"""Each step's act prompt: the whole plan with its statuses, and what the earlier steps found, in budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Budget, Runtime, TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan, say, verdict
from .support import make_agent, model_ops, run_agent


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """These behaviours on the reference store and on a file store."""
    return str(request.param)


def _system(op: Any) -> str:
    return str(op.input["messages"][0]["content"])


async def test_the_act_prompt_shows_every_step_with_its_status_and_the_earlier_reports(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X", "tell the team")],
                "act": [say("X leaks memory since v1.4"), say("X restarted"), say("told")],
                "verify": [verdict(True)] * 3,
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    first, _, third = await model_ops(store, task.id, "act")
    assert "1. look at X [current]\n2. restart X [pending]\n3. tell the team [pending]" in _system(first)
    assert "earlier steps found" not in _system(first)
    assert "1. look at X [completed]\n2. restart X [completed]\n3. tell the team [current]" in _system(third)
    assert (
        "What the earlier steps found (newest first):\n"
        "- step 2 (restart X, completed): X restarted\n"
        "- step 1 (look at X, completed): X leaks memory since v1.4\n"
    ) in _system(third)


async def test_earlier_reports_stay_within_their_share_of_the_context_budget(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    names = [f"probe {n}" for n in range(1, 9)]
    long = "the probe saw " + "slow replies, " * 40  # > 1/8 of the budget: kept as an artifact
    agent = make_agent(
        script(
            {
                "plan": [plan(*names)],
                "act": [
                    say(long),
                    *(say(f"probe {n} found nothing new, all {n * 10} checks pass") for n in range(2, 9)),
                ],
                "verify": [verdict(True)] * 8,
            }
        ),
        budget=Budget(max_artifact_bytes_in_context=1000),
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    acts = await model_ops(store, task.id, "act")
    findings = [_system(op).partition("What the earlier steps found")[2] for op in acts]
    second = "What the earlier steps found" + findings[1].split("Known facts")[0]
    assert f"[the whole report is artifact {task.id}-report-1; read it with read_artifact]" in second
    assert long not in second  # its beginning only
    body = await store.read_artifact(f"{task.id}-report-1")
    assert body.decode() == long
    last = _system(acts[-1])
    start = last.index("What the earlier steps found")
    end = last.index("Use the tools")
    assert len(last[start:end].encode()) <= 500  # half of the budget
    assert "step 7 (probe 7, completed)" in last and "older reports left out for space" in last
    assert "step 1 (probe 1" not in last


async def test_a_resumed_task_rebuilds_the_same_prompt_from_its_journal(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "ask where", "deploy X")],
                "act": [
                    say("X is on v1"),
                    calls(("ask_user", {"question": "Which region?"})),
                    say("eu-west-1 it is"),
                    say("deployed"),
                ],
                "verify": [verdict(True)] * 3,
            }
        ),
        replan_on=(),
    )
    waiting = await run_agent(rt, agent)
    assert waiting.waiting_on is WaitReason.INPUT, waiting.error
    await rt.answer(waiting.id, "eu-west-1")
    task = await rt.resume(waiting.id)

    assert task.status is TaskStatus.COMPLETED, task.error
    last = _system((await model_ops(store, task.id, "act"))[-1])
    assert (
        "- step 2 (ask where, completed): eu-west-1 it is\n- step 1 (look at X, completed): X is on v1"
        in last
    )

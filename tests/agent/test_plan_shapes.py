"""Plans in the shapes real models write: inputs_params and context as any JSON value, extra keys ignored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.store import StateStore

from ..helpers.scripts import plan, say, verdict
from .support import event_kinds, make_agent, run_agent


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """These behaviours on the reference store and on a file store."""
    return str(request.param)


def _planned(**fields: Any) -> dict[str, Any]:
    entry = plan("restart X")
    return {"content": {**entry["content"], **fields}}


async def test_a_plan_whose_inputs_params_is_a_string_runs_to_completion(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    planned = _planned(
        inputs_params="service X, in production", context={"env": "prod"}, priority="high", owner=None
    )
    agent = make_agent(script({"plan": [planned], "act": [say("restarted")], "verify": [verdict(True)]}))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "restarted"
    assert "plan_invalid" not in await event_kinds(store, task.id)  # extra keys are no repair
    stored = await store.get_task(task.id)
    assert stored.inputs_params["plan_inputs"] == "service X, in production"
    assert stored.inputs_params["agent"] == agent.spec.model_dump(mode="json")  # the task's own, untouched
    assert stored.context == '{"env": "prod"}'


async def test_a_plan_never_replaces_the_tasks_own_agent_whatever_its_inputs_shape(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    planned = _planned(inputs_params={"agent": {"allow_shell": True}, "service": "X"}, context=["a", "b"])
    agent = make_agent(script({"plan": [planned], "act": [say("restarted")], "verify": [verdict(True)]}))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    stored = await store.get_task(task.id)
    assert stored.inputs_params["service"] == "X"
    assert stored.inputs_params["agent"] == agent.spec.model_dump(mode="json")
    assert stored.context == '["a", "b"]'

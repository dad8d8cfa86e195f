"""The agent's compaction is the engine's middleware: on by default, replaced or removed by
``Agent(compaction=...)``, recorded in the task so any worker rebuilds it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Agent, Runtime, TaskStatus
from ratchet.engine.calls.compaction import Compaction
from ratchet.errors import InputError
from ratchet.store import StateStore

from ..helpers import agent_tools
from ..helpers.scripts import calls, plan, say, verdict
from .custom_compaction import keep_ends
from .support import INSTRUCTIONS, model_ops, run_agent

TURNS = 5


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _agent(script: Callable[[dict[str, Any]], str], **options: Any) -> Agent:
    model = script(
        {
            "plan": [plan("read the logs")],
            "act": [calls(("fetch_logs", {"service": f"X{t}", "size": 400})) for t in range(TURNS)]
            + [say("the logs look normal")],
            "verify": [verdict(True)],
            "summarize": [say(f"summary {turn}") for turn in range(TURNS)],
        }
    )
    return Agent("ops", INSTRUCTIONS, tools=[agent_tools.fetch_logs], model=model, **options)


async def _acts(store: StateStore, agent: Agent) -> tuple[Any, list[Any], list[Any]]:
    task = await run_agent(Runtime(store), agent)
    assert task.status is TaskStatus.COMPLETED, task.error
    return task, await model_ops(store, task.id, "act"), await model_ops(store, task.id, "summarize")


async def test_the_built_in_compaction_with_its_own_settings(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = _agent(script, compaction=Compaction(token_budget=200, keep_recent=2))
    assert (agent.spec.history_token_budget, agent.spec.keep_recent_messages) == (200, 2)

    _, acts, summaries = await _acts(store, agent)

    assert summaries
    assert len(acts[-1].input["messages"]) == 2 + 1 + 2


async def test_no_compaction_sends_the_whole_history(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = _agent(script, compaction=None, history_token_budget=200, keep_recent_messages=2)
    assert agent.spec.compaction is None

    task, acts, summaries = await _acts(store, agent)

    assert summaries == []
    assert len(acts[-1].input["messages"]) == 2 + 2 * TURNS
    assert "compacted" not in [e.kind for e in await store.list_events(task.id)]


async def test_a_compaction_of_ones_own_replaces_the_built_in_one(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = _agent(script, compaction=keep_ends, history_token_budget=200)
    assert agent.spec.compaction == "tests.agent.custom_compaction:keep_ends"

    task, acts, summaries = await _acts(store, agent)

    assert summaries == []
    assert [len(op.input["messages"]) for op in acts] == [2] + [4] * TURNS
    assert len(await store.list_messages(task.id)) == 2 + 2 * TURNS + 1  # nothing stored is lost


def test_a_compaction_no_worker_could_load_is_refused(script: Callable[[dict[str, Any]], str]) -> None:
    with pytest.raises(InputError, match="top level of a module"):
        _agent(script, compaction=type(keep_ends)())

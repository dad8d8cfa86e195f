"""The agent tests' agent, how they run it, and readers of what an agent task left in its store."""

from __future__ import annotations

import asyncio
from typing import Any

from ratchet import Agent, Budget, Runtime, Task
from ratchet.records import Event, Operation
from ratchet.store import StateStore

from ..helpers import agent_tools

# No agent test may hang: every run is bounded by this many seconds.
GUARD = 20.0

INSTRUCTIONS = "You keep the services of a small shop running."
INSTRUCTION = "Service X is slow: find out why and fix it."


def make_agent(
    model: str, *, budget: Budget | None = None, tools: tuple[Any, ...] | None = None, **spec: Any
) -> Agent:
    """An agent with the test tools; `spec` sets AgentSpec fields the constructor does not take."""
    chosen = (
        tools
        if tools is not None
        else (
            agent_tools.check_status,
            agent_tools.restart_service,
            agent_tools.deploy,
            agent_tools.fetch_logs,
            agent_tools.flaky_probe,
        )
    )
    agent = Agent("ops", INSTRUCTIONS, tools=chosen, model=model, budget=budget)
    if spec:
        agent.spec = agent.spec.model_copy(update=spec)
    return agent


async def run_agent(rt: Runtime, agent: Agent, instruction: str = INSTRUCTION, **options: Any) -> Task:
    """Run the agent on the instruction until the task ends or waits; never longer than `GUARD`."""
    return await asyncio.wait_for(rt.run(agent, instruction=instruction, **options), GUARD)


async def model_ops(store: StateStore, task_id: str, purpose: str) -> list[Operation]:
    return [op for op in await store.list_ops(task_id) if op.name == f"model:{purpose}"]


async def event_kinds(store: StateStore, task_id: str) -> list[str]:
    return [event.kind for event in await store.list_events(task_id)]


async def events_of(store: StateStore, task_id: str, kind: str) -> list[Event]:
    return [event for event in await store.list_events(task_id) if event.kind == kind]


def request_messages(op: Operation) -> list[dict[str, Any]]:
    """The messages a journaled model operation sent."""
    return list(op.input["messages"])


def is_subsequence(wanted: list[str], seen: list[str]) -> bool:
    rest = iter(seen)
    return all(any(item == kind for kind in rest) for item in wanted)

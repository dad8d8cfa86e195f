"""A RatchetAgent run outside a workflow with `deps`: kept in the process that started it, made elsewhere.

The run waits for a person (an ``external_action`` tool) and is then taken
over by ``Runtime.resume``, as a worker or ``ratchet resume`` in another
process would: the agent is found by its name in this module, and its deps
come from its ``deps_factory``, or the task waits for its code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext

from ratchet import Runtime, TaskStatus, WaitReason
from ratchet.errors import AgentRunNotCompleted
from ratchet.integrations.pydantic_ai import RatchetAgent
from ratchet.store import StateStore

from .pydai_support import Counts, calling


@dataclass
class Outbox:
    """What most pydantic-ai deps are: a live object (a client, a connection), not data to store."""

    sent: list[str] = field(default_factory=list)
    handle: object = field(default_factory=object)  # JSON can't hold it


def _outboxer(name: str, *, risk: str = "write_local") -> Agent[Outbox, str]:
    agent = Agent(calling("send", {"to": "ops"}, Counts()), name=name, deps_type=Outbox)

    @agent.instructions
    def who(ctx: RunContext[Outbox]) -> str:
        return f"{len(ctx.deps.sent)} sent so far"  # deps read on every run, replays included

    @agent.tool(metadata={"ratchet": {"risk": risk}})
    def send(ctx: RunContext[Outbox], to: str) -> str:
        """Send a message through the outbox."""
        ctx.deps.sent.append(to)
        return f"queued for {to}"

    return agent


async def test_a_run_uses_the_deps_it_is_given_and_does_not_store_them(store: StateStore) -> None:
    outbox = Outbox()
    mailer = RatchetAgent(_outboxer("outboxer"), store=store)

    result = await mailer.run("tell ops", deps=outbox, task_id="deps-1")

    assert result.output == "the tool said: queued for ops"
    assert outbox.sent == ["ops"]
    task = await store.get_task("deps-1")
    assert task.status is TaskStatus.COMPLETED
    assert task.inputs_params["given_deps"] is True
    assert "handle" not in json.dumps(task.inputs_params)  # the deps stay in this process
    again = await mailer.run("tell ops", deps=Outbox(), task_id="deps-1")  # a replay, given its deps
    assert again.output == result.output and outbox.sent == ["ops"]


WAITING = RatchetAgent(_outboxer("outboxer-waits", risk="external_action"))
MADE: list[Outbox] = []


def _make_outbox() -> Outbox:
    MADE.append(Outbox())
    return MADE[-1]


FACTORY = RatchetAgent(_outboxer("outboxer-made", risk="external_action"), deps_factory=_make_outbox)


async def _started_here_then_approved(agent: RatchetAgent, store: StateStore, task_id: str) -> Runtime:
    agent.store = store
    here = Outbox()
    with pytest.raises(AgentRunNotCompleted):
        await agent.run("tell ops", deps=here, task_id=task_id)
    assert (await store.get_task(task_id)).waiting_on is WaitReason.APPROVAL
    runtime = Runtime(store)
    await runtime.approve(task_id)
    return runtime


async def test_taken_over_without_a_deps_factory_the_run_waits_naming_it(store: StateStore) -> None:
    rt = await _started_here_then_approved(WAITING, store, "deps-2")

    task = await rt.resume("deps-2")  # as a worker elsewhere would: the deps stayed in the first process

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    said = [event.message for event in await store.last_events("deps-2", 5)]
    assert any("was given deps" in line and "deps_factory=" in line for line in said), said
    assert [op.name for op in await store.list_ops("deps-2")] == [
        "model:outboxer-waits"
    ]  # the tool did not run


async def test_taken_over_with_a_deps_factory_the_run_finishes_with_its_deps(store: StateStore) -> None:
    MADE.clear()
    rt = await _started_here_then_approved(FACTORY, store, "deps-3")

    task = await rt.resume("deps-3")

    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, dict) and task.result["output"] == "the tool said: queued for ops"
    assert [outbox.sent for outbox in MADE] == [["ops"]]  # the approved call ran once, with made deps


async def test_given_none_a_run_here_uses_the_deps_factory_too(store: StateStore) -> None:
    made: list[Outbox] = []

    async def make() -> Outbox:  # a factory may be async
        made.append(Outbox())
        return made[-1]

    mailer = RatchetAgent(_outboxer("outboxer-async"), store=store, deps_factory=make)
    result: Any = await mailer.run("tell ops", task_id="deps-4")

    assert result.output == "the tool said: queued for ops"
    assert [outbox.sent for outbox in made] == [["ops"]]
    assert "given_deps" not in (await store.get_task("deps-4")).inputs_params

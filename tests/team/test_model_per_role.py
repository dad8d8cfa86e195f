"""A model per role: ``ctx.call_model(..., model="provider:name")`` next to the task's model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Agent
from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..engine.flows import Crash
from ..helpers.loopback import LoopbackServer, chat_completion
from .role_flows import FLOWS


def answers(purpose: str, *texts: str) -> dict[str, Any]:
    return {purpose: [{"content": text} for text in texts]}


async def test_each_role_asks_its_own_model_and_a_replay_asks_none(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    architect = script(answers("act", "modules: a, b"))
    coder = script(answers("act", "def a(): ...", "def b(): ..."))
    task_id = await rt.submit(
        f"{FLOWS}:two_roles", {"architect": architect, "coder": coder, "ledger": ledger}
    )
    with pytest.raises(Crash):
        await rt.resume(task_id)
    for model in (architect, coder):  # the scripts are gone: a provider built now would fail
        Path(model.removeprefix("scripted:")).unlink()

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    # Each scripted model follows its own script: the coder's first answer is its entry 0.
    assert task.result == {"plan": "modules: a, b", "code": ["def a(): ...", "def b(): ..."], "own": None}
    ops = [op for op in await store.list_ops(task_id) if op.name == "model:act"]
    assert [op.input["model"] for op in ops] == [architect, coder, coder]
    assert [op.meta["ordinal"] for op in ops] == [0, 0, 1]


async def test_a_call_without_model_asks_the_tasks_own(
    rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    architect = script(answers("act", "modules: a"))
    coder = script(answers("act", "def a(): ...", "def b(): ..."))
    own = script(answers("act", "all done"))
    task_id = await rt.submit(
        f"{FLOWS}:two_roles", {"architect": architect, "coder": coder, "ledger": ledger}, model=own
    )
    with pytest.raises(Crash):
        await rt.resume(task_id)

    task = await rt.resume(task_id)

    assert isinstance(task.result, dict)
    assert task.result["own"] == "all done"
    last = [op for op in await rt.store.list_ops(task_id) if op.name == "model:act"][-1]
    assert "model" not in last.input  # the task's model: its input is the request alone
    assert last.meta["ordinal"] == 0


async def test_a_model_that_is_no_provider_name_fails_the_task_saying_so(rt: Runtime, ledger: str) -> None:
    task = await rt.run(f"{FLOWS}:two_roles", {"architect": "gpt-4o", "coder": "gpt-4o", "ledger": ledger})

    assert task.status is TaskStatus.FAILED
    assert task.error is not None and "provider:name" in task.error


async def test_agents_on_different_providers_each_use_their_own_model(
    store: StateStore, ledger: str, script: Callable[[dict[str, Any]], str], server: LoopbackServer
) -> None:
    planner = Agent("architect", model="openai:architect-model")
    coder = Agent("coder", model=script(answers("act", "def a(): ...", "def b(): ...")))
    server.answer(chat_completion("modules: a, b"))
    rt = Runtime(store)
    inputs: dict[str, Any] = {"architect": planner.model, "coder": coder.model, "ledger": ledger}
    task_id = await rt.submit(f"{FLOWS}:two_roles", inputs)
    with pytest.raises(Crash):
        await rt.resume(task_id)

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, dict)
    assert task.result["plan"] == "modules: a, b"
    assert task.result["code"] == ["def a(): ...", "def b(): ..."]
    assert [r.body["model"] for r in server.received] == ["architect-model"]  # once: the replay asked none

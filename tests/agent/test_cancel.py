"""Runtime.cancel on an agent task: queued or running, it ends cancelled and its worker stops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ratchet import CannotResume, LeaseLost, Runtime, StepStatus, TaskStatus
from ratchet.store import StateStore

from ..helpers.scripts import plan, say, verdict
from .support import GUARD, INSTRUCTION, event_kinds, make_agent, model_ops


async def test_a_queued_agent_task_is_cancelled_and_cannot_be_resumed(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    task_id = await rt.submit(make_agent(script({"plan": [plan("look at X")]})), instruction=INSTRUCTION)

    cancelled = await rt.cancel(task_id, reason="not needed")

    assert cancelled.status is TaskStatus.CANCELLED and cancelled.error == "not needed"
    assert (await store.get_task(task_id)).status is TaskStatus.CANCELLED
    assert "task_cancelled" in await event_kinds(store, task_id)
    with pytest.raises(CannotResume):
        await rt.resume(task_id)


async def test_a_running_agent_task_is_cancelled_and_its_worker_stops_writing(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X")],
                "act": [say("looked"), {**say("restarted"), "delay": 1.0}],
                "verify": [verdict(True), verdict(True)],
            }
        )
    )
    rt = Runtime(store)
    task_id = await rt.submit(agent, instruction=INSTRUCTION, queue=False)
    running = asyncio.create_task(rt.resume(task_id))
    for _ in range(200):
        if len(await model_ops(store, task_id, "verify")) == 1:
            break
        await asyncio.sleep(0.01)

    cancelled = await rt.cancel(task_id)

    with pytest.raises(LeaseLost):
        await asyncio.wait_for(running, GUARD)
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.CANCELLED and cancelled.status is TaskStatus.CANCELLED
    assert [s.status for s in await store.list_steps(task_id)] == [StepStatus.COMPLETED, StepStatus.CANCELLED]
    assert len(await model_ops(store, task_id, "act")) == 1  # the slow answer came after the cancel: not kept
    kinds = await event_kinds(store, task_id)
    assert kinds[-1] == "task_cancelled" and "task_completed" not in kinds

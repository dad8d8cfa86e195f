"""An agent's own checkpoint policy: recorded with its task; strategy, keep and max_age take effect."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.errors import CannotResume
from ratchet.policy import CheckpointPolicy, CheckpointStrategy
from ratchet.records import StepStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.agent_tools import CRASH_VARIABLE, SimulatedCrash
from ..helpers.scripts import calls, plan, say, verdict
from .support import GUARD, INSTRUCTION, events_of, make_agent, run_agent

THREE_STEPS: dict[str, Any] = {
    "plan": [plan("look at X", "restart X", "ship v2")],
    "act": [
        calls(("check_status", {"service": "X"})),
        say("X is degraded"),
        calls(("restart_service", {"service": "X"})),
        say("X restarted"),
        calls(("deploy", {"version": "v2"})),
        say("v2 is live"),
    ],
    "verify": [verdict(True), verdict(True), verdict(True)],
}


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_the_policy_is_recorded_with_the_task(
    rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    policy = CheckpointPolicy(strategy=CheckpointStrategy.ON_STATE_CHANGE, keep=2, max_age=3600)
    agent = make_agent(script(THREE_STEPS), checkpoint=policy)

    task_id = await rt.submit(agent, instruction=INSTRUCTION)

    task = await rt.store.get_task(task_id)
    assert task.inputs_params["agent"]["checkpoint"] == {  # type: ignore[index,call-overload]
        "strategy": "on_state_change",
        "keep": 2,
        "max_age": 3600.0,
    }


async def test_keep_rotates_the_agent_tasks_checkpoints(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(rt, make_agent(script(THREE_STEPS), checkpoint=CheckpointPolicy(keep=1)))

    assert task.status is TaskStatus.COMPLETED, task.error
    [kept] = await store.list_checkpoints(task.id)
    assert kept.number == 3
    assert [s.status for s in kept.steps] == [StepStatus.COMPLETED] * 3


async def test_every_iteration_checkpoints_before_each_model_call_with_the_agents_steps(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    every_step = await run_agent(rt, make_agent(script(THREE_STEPS)))
    policy = CheckpointPolicy(strategy=CheckpointStrategy.EVERY_ITERATION)
    iterating = await run_agent(rt, make_agent(script(THREE_STEPS), checkpoint=policy))

    assert iterating.status is TaskStatus.COMPLETED, iterating.error
    assert len(await store.list_checkpoints(every_step.id)) == 3
    checkpoints = await store.list_checkpoints(iterating.id)
    # 1 plan + 3 x (2 act + 1 verify) model calls: one checkpoint before each after the first, and 3 steps'.
    assert len(checkpoints) == 9 + 3
    first = checkpoints[0]  # before the first act: the plan is adopted, its first step current
    assert [(s.name, s.status) for s in first.steps] == [
        ("look at X", StepStatus.CURRENT),
        ("restart X", StepStatus.PENDING),
        ("ship v2", StepStatus.PENDING),
    ]
    assert [s.status for s in checkpoints[-1].steps] == [StepStatus.COMPLETED] * 3


async def test_on_state_change_checkpoints_when_the_agent_state_changes(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    policy = CheckpointPolicy(strategy=CheckpointStrategy.ON_STATE_CHANGE)
    task = await run_agent(rt, make_agent(script(THREE_STEPS), checkpoint=policy))

    assert task.status is TaskStatus.COMPLETED, task.error
    checkpoints = await store.list_checkpoints(task.id)
    assert len(checkpoints) == 1 + 3  # the plan (a replace_plan patch), then each step's
    assert checkpoints[0].state.plan == ["look at X", "restart X", "ship v2"]


async def test_an_agent_tasks_max_age_sets_it_aside_when_resumed_too_late(
    store_url: str,
    script: Callable[[dict[str, Any]], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = tmp_path / "crash-once"
    marker.touch()
    monkeypatch.setenv(CRASH_VARIABLE, str(marker))
    agent = make_agent(script(THREE_STEPS), checkpoint=CheckpointPolicy(max_age=1))
    async with Runtime(store_url) as rt:
        with pytest.raises(SimulatedCrash):  # the worker "dies" in step 3, after 2 checkpoints
            await asyncio.wait_for(rt.run(agent, instruction=INSTRUCTION, task_id="late"), GUARD)
        await asyncio.sleep(1.2)

        with pytest.raises(CannotResume, match=r"its newest checkpoint \(number 2\) is \d+ s old"):
            await Runtime(rt.store).resume("late")
        assert (await rt.store.get_task("late")).waiting_on is WaitReason.STALE
        [event] = await events_of(rt.store, "late", "task_stale")
        assert "`ratchet resume late --force`" in event.message

        forced = await asyncio.wait_for(Runtime(rt.store).resume("late", force=True), GUARD)
        assert (forced.status, forced.result) == (TaskStatus.COMPLETED, "v2 is live")

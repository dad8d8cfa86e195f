"""Step timeouts: an attempt at a step that runs too long fails like a failed check, alike on replay."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import ratchet
from ratchet import Runtime, TaskStatus
from ratchet.records import OpStatus, StepStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan, say, verdict
from .support import GUARD, events_of, make_agent, model_ops, run_agent

# Roomy enough that a loaded machine ends an attempt that answers at once within it (0.5 s did
# not, once, on CI's 2 cores); an attempt meant to time out sleeps well past it.
TIMEOUT = 1.5
ROOMY = 3.0  # for an attempt that must not time out across a wait and a resume
SLOW = {"content": "still thinking", "delay": 5}


@ratchet.tool(risk="write_local")
async def linger(seconds: float, call: ratchet.ToolContext) -> str:
    """Take `seconds`, under the call's idempotency key."""
    await asyncio.sleep(seconds)
    return "lingered"


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _script(*act: dict[str, Any], verify: int = 1) -> dict[str, Any]:
    return {"plan": [plan("look at X")], "act": list(act), "verify": [verdict(True)] * verify}


def _timed_out(ops: list[Any]) -> list[Any]:
    return [op for op in ops if op.error_type == "StepTimedOut"]


async def test_an_attempt_past_its_timeout_fails_and_the_step_is_tried_again(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script(_script(SLOW, say("X is degraded"))), step_timeout=TIMEOUT)

    task = await run_agent(rt, agent)

    assert (task.status, task.result) == (TaskStatus.COMPLETED, "X is degraded")
    [step] = await store.list_steps(task.id)
    assert (step.status, step.attempts) == (StepStatus.COMPLETED, 2)
    cut, answered = await model_ops(store, task.id, "act")
    assert (cut.status, cut.error_type) == (OpStatus.FAILED, "StepTimedOut")
    assert cut.error == f"step 1 (look at X) timed out after {TIMEOUT:g} s"
    assert answered.status is OpStatus.SUCCEEDED
    [said] = await events_of(store, task.id, "step_timed_out")
    assert said.message.startswith(f"step 1 (look at X) timed out after {TIMEOUT:g} s")
    [retry] = await events_of(store, task.id, "step_retry")
    assert f"timed out after {TIMEOUT:g} s" in retry.message
    assert len(await model_ops(store, task.id, "verify")) == 1  # a timed-out attempt is not checked


async def test_a_step_that_keeps_timing_out_fails_the_task(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script(_script(SLOW, SLOW)), step_timeout=TIMEOUT, max_step_attempts=2)

    task = await run_agent(rt, agent)

    assert task.status is TaskStatus.FAILED
    assert f"timed out after {TIMEOUT:g} s" in (task.error or "")
    assert len(_timed_out(await store.list_ops(task.id))) == 2


async def test_a_resumed_task_replays_its_timed_out_attempt_alike(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    retried = [calls(("ask_user", {"question": "which region?"})), say("X is degraded")]
    # The second attempt's clock runs while it waits for the answer and while it resumes: a budget
    # that a loaded machine's resume fits in, so that only the first attempt is cut.
    agent = make_agent(script(_script(SLOW, *retried)), step_timeout=ROOMY)
    waiting = await run_agent(rt, agent)
    assert (waiting.status, waiting.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT)
    journal = [(op.seq, op.name, op.status) for op in await store.list_ops(waiting.id)]

    await rt.answer(waiting.id, "eu-west")
    done = await asyncio.wait_for(Runtime(store).resume(waiting.id), GUARD)  # replays the cut attempt

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "X is degraded"), done.error
    ops = await store.list_ops(done.id)
    assert [(op.seq, op.name) for op in ops[: len(journal)]] == [(seq, name) for seq, name, _ in journal]
    assert len(_timed_out(ops)) == 1
    assert len(await events_of(store, done.id, "step_timed_out")) == 1


async def test_time_spent_waiting_counts_and_the_resumed_attempt_is_cut_at_its_next_call(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    act = [calls(("ask_user", {"question": "which region?"})), say("too late"), say("X is degraded")]
    agent = make_agent(script(_script(*act)), step_timeout=TIMEOUT)
    waiting = await run_agent(rt, agent)
    assert waiting.waiting_on is WaitReason.INPUT
    await asyncio.sleep(TIMEOUT + 0.2)

    await rt.answer(waiting.id, "eu-west")
    done = await asyncio.wait_for(Runtime(store).resume(waiting.id), GUARD)

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "too late"), done.error
    asked, cut, answered = await model_ops(store, done.id, "act")
    assert asked.status is OpStatus.SUCCEEDED
    assert (cut.error_type, cut.meta.get("ordinal")) == ("StepTimedOut", None)  # it never reached the model
    assert answered.status is OpStatus.SUCCEEDED
    [step] = await store.list_steps(done.id)
    assert step.attempts == 2


async def test_a_tool_call_in_flight_at_the_deadline_is_cut_and_recorded_as_timed_out(
    rt: Runtime, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    act = [calls(("linger", {"seconds": 5})), say("X is degraded")]
    agent = make_agent(script(_script(*act)), tools=(linger,), step_timeout=TIMEOUT)

    task = await run_agent(rt, agent)

    assert (task.status, task.result) == (TaskStatus.COMPLETED, "X is degraded"), task.error
    [cut] = [op for op in await store.list_ops(task.id) if op.name == "linger"]
    assert (cut.status, cut.error_type) == (OpStatus.FAILED, "StepTimedOut")  # not left in doubt
    [step] = await store.list_steps(task.id)
    assert (step.status, step.attempts) == (StepStatus.COMPLETED, 2)

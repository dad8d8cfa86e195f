"""An agent task whose worker died resumes where its journal stopped; nothing done is done again."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, StepStatus, TaskStatus
from ratchet.records import OpStatus
from ratchet.store import StateStore, open_store

from ..helpers.agent_tools import CRASH_VARIABLE, SimulatedCrash
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .support import GUARD, INSTRUCTION, make_agent, model_ops

SCRIPT: dict[str, Any] = {
    "plan": [plan("look at X", "ship v2")],
    "act": [
        calls(("check_status", {"service": "X"}), ("restart_service", {"service": "X"})),
        say("X restarted"),
        calls(("deploy", {"version": "v2"})),
        say("v2 is live"),
    ],
    "verify": [verdict(True, "X answers"), verdict(True, "v2 answers")],
}


async def _crash_in_deploy(
    store_url: str, model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task_id: str
) -> None:
    """Run the task until `deploy` "kills" the process: its intent is committed, its effect not done."""
    marker = tmp_path / "crash-once"
    marker.touch()
    monkeypatch.setenv(CRASH_VARIABLE, str(marker))
    async with Runtime(store_url) as rt:
        with pytest.raises(SimulatedCrash):
            await asyncio.wait_for(rt.run(make_agent(model), instruction=INSTRUCTION, task_id=task_id), GUARD)
        task = await rt.store.get_task(task_id)
        assert task.status is TaskStatus.RUNNING
        deploy = next(op for op in await rt.store.list_ops(task_id) if op.name == "deploy")
        assert deploy.status is OpStatus.STARTED


async def _resume(store_url: str, task_id: str) -> None:
    async with Runtime(store_url) as rt:  # a new process: a new runtime, a new scripted model
        task = await asyncio.wait_for(rt.resume(task_id), GUARD)
        assert task.status is TaskStatus.COMPLETED, task.error


async def _uninterrupted(store_url: str, model: str, task_id: str) -> None:
    async with Runtime(store_url) as rt:
        task = await asyncio.wait_for(
            rt.run(make_agent(model), instruction=INSTRUCTION, task_id=task_id), GUARD
        )
        assert task.status is TaskStatus.COMPLETED, task.error


@pytest.fixture
async def crashed_and_resumed(
    store_url: str, script: Callable[[dict[str, Any]], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    model = script(SCRIPT)
    await _crash_in_deploy(store_url, model, tmp_path, monkeypatch, "crashed")
    await _resume(store_url, "crashed")
    await _uninterrupted(store_url, model, "reference")
    return store_url


async def test_a_resumed_task_completes_as_an_uninterrupted_one_does(crashed_and_resumed: str) -> None:
    store = await open_store(crashed_and_resumed)
    try:
        crashed, reference = (await store.get_task("crashed")), (await store.get_task("reference"))
        assert crashed.result == reference.result == "v2 is live"
        assert [(s.name, s.status, s.attempts) for s in await store.list_steps("crashed")] == [
            (s.name, s.status, s.attempts) for s in await store.list_steps("reference")
        ]
        assert [s.status for s in await store.list_steps("crashed")] == [StepStatus.COMPLETED] * 2
        journal = [(op.seq, op.name, op.status) for op in await store.list_ops("crashed")]
        assert journal == [(op.seq, op.name, op.status) for op in await store.list_ops("reference")]
        assert crashed.state.plan == reference.state.plan
    finally:
        await store.close()


async def test_completed_tool_calls_are_not_run_again_and_the_keyed_one_in_flight_runs_once_more(
    crashed_and_resumed: str, tools_ledger: Ledger
) -> None:
    store = await open_store(crashed_and_resumed)
    try:
        ops = {op.name: op for op in await store.list_ops("crashed")}
    finally:
        await store.close()
    invocations = {
        (tool, key): n
        for (tool, key), n in tools_ledger.invocations().items()
        if not key.startswith("reference")
    }
    assert invocations == {
        ("check_status", "X"): 2,  # once for each task: the crashed one did not read X again
        ("restart_service", ops["restart_service"].idempotency_key): 1,
        ("deploy", ops["deploy"].idempotency_key): 2,  # in flight at the crash: run again under its key
    }
    effects = Counter(tool for tool, key in tools_ledger.effects() if key.startswith("crashed"))
    assert effects == {"restart_service": 1, "deploy": 1}
    assert ops["deploy"].attempt == 2


async def test_the_scripted_model_continues_where_it_stopped(crashed_and_resumed: str) -> None:
    store = await open_store(crashed_and_resumed)
    try:
        for purpose, count in (("plan", 1), ("act", 4), ("verify", 2)):
            ops = await model_ops(store, "crashed", purpose)
            assert [op.meta["ordinal"] for op in ops] == list(range(count)), purpose
        events = [e.kind for e in await store.list_events("crashed")]
        assert events.count("task_resumed") == 1 and events.count("in_doubt_rerun") == 1
    finally:
        await store.close()


async def test_a_resume_writes_each_message_event_and_checkpoint_once(crashed_and_resumed: str) -> None:
    store = await open_store(crashed_and_resumed)
    try:
        await _assert_same_history(store, "crashed", "reference")
    finally:
        await store.close()


async def _assert_same_history(store: StateStore, task_id: str, reference_id: str) -> None:
    """Messages, the loop's events and checkpoints of a resumed task equal an uninterrupted run's."""

    def message(m: Any) -> tuple[Any, ...]:
        return (m.role, m.content, json.dumps(m.tool_calls), m.tool_call_id)

    got = [message(m) for m in await store.list_messages(task_id)]
    want = [message(m) for m in await store.list_messages(reference_id)]
    assert len(got) == len(want), f"{len(got)} messages stored, {len(want)} in an uninterrupted run"
    assert got == want
    loop_kinds = ("plan", "step_started", "step_completed", "step_retry", "replanned", "task_completed")
    kinds = Counter(e.kind for e in await store.list_events(task_id) if e.kind in loop_kinds)
    assert kinds == Counter(e.kind for e in await store.list_events(reference_id) if e.kind in loop_kinds)
    seqs = [c.last_seq for c in await store.list_checkpoints(task_id)]
    assert seqs == [c.last_seq for c in await store.list_checkpoints(reference_id)]


async def test_a_run_stopped_during_a_model_call_resumes_without_writing_anything_twice(
    store_url: str, script: Callable[[dict[str, Any]], str]
) -> None:
    """The worker stops while step 2's first act request is on its way (as a kill would).

    Step 1's completion (event, checkpoint), step 2's start (event) and its
    first messages were written after the last journaled operation (step 1's
    verdict); the resume replays up to that verdict, then must not write them
    a second time.
    """
    slow = json.loads(json.dumps(SCRIPT))
    slow["act"][2] = {**slow["act"][2], "delay": 30}
    model = script(slow)
    async with Runtime(store_url) as rt:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(rt.run(make_agent(model), instruction=INSTRUCTION, task_id="stopped"), 1.0)
        assert [s.status for s in await rt.store.list_steps("stopped")] == [
            StepStatus.COMPLETED,
            StepStatus.CURRENT,
        ]
    Path(model.removeprefix("scripted:")).write_text(
        json.dumps(SCRIPT)
    )  # the model answers at once this time
    await _resume(store_url, "stopped")
    await _uninterrupted(store_url, script(SCRIPT), "reference")

    store = await open_store(store_url)
    try:
        assert [s.status for s in await store.list_steps("stopped")] == [StepStatus.COMPLETED] * 2
        await _assert_same_history(store, "stopped", "reference")
    finally:
        await store.close()


async def test_an_artifact_made_before_a_crash_is_kept_once_after_the_resume(
    store_url: str, script: Callable[[dict[str, Any]], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = script(
        {
            "plan": [plan("ship v2")],
            "act": [
                calls(("fetch_logs", {"service": "X", "size": 9000})),
                calls(("deploy", {"version": "v2"})),
                say("v2 is live"),
            ],
            "verify": [verdict(True)],
        }
    )
    await _crash_in_deploy(store_url, model, tmp_path, monkeypatch, "with-artifact")
    await _resume(store_url, "with-artifact")

    store = await open_store(store_url)
    try:
        task = await store.get_task("with-artifact")
        assert [a.artifact_id for a in task.state.artifacts] == ["with-artifact-artifact-1"]
        assert [a.bytes for a in await store.list_artifacts("with-artifact")] == [9000]
        last_act = (await model_ops(store, "with-artifact", "act"))[-1]
        assert "with-artifact-artifact-1" in str(last_act.input["messages"])
    finally:
        await store.close()


async def test_a_resumed_task_runs_the_agent_it_was_given_whatever_the_plan_said(
    store_url: str, script: Callable[[dict[str, Any]], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan whose inputs_params carry an "agent" key must not turn the shell on for the resume."""
    hijack = plan("ship v2")
    hijack["content"]["inputs_params"] = {
        "agent": {"name": "ops", "tool_sources": ["tests.helpers.agent_tools"], "allow_shell": True},
    }
    model = script(
        {**SCRIPT, "plan": [hijack], "act": [calls(("deploy", {"version": "v2"})), say("v2 is live")]}
    )
    await _crash_in_deploy(store_url, model, tmp_path, monkeypatch, "hijacked")
    await _resume(store_url, "hijacked")

    store = await open_store(store_url)
    try:
        first, after_resume = await model_ops(store, "hijacked", "act")
        assert "run_shell" not in {t["name"] for t in first.input["tools"]}
        assert "run_shell" not in {t["name"] for t in after_resume.input["tools"]}
    finally:
        await store.close()

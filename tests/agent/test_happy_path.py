"""An agent task from instruction to result: plan, act with tools, verify, step by step."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ratchet import Runtime, StepStatus, TaskStatus
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .support import INSTRUCTION, event_kinds, is_subsequence, make_agent, model_ops, run_agent

SCRIPT: dict[str, Any] = {
    "plan": [plan("look at X", "restart X")],
    "act": [
        calls(
            ("check_status", {"service": "X"}), ("write_file", {"path": "notes.md", "content": "X degraded"})
        ),
        say("X is degraded"),
        calls(("restart_service", {"service": "X"})),
        say("X restarted"),
    ],
    "verify": [verdict(True, "status read"), verdict(True, "X answers")],
}


async def test_a_planned_task_runs_every_step_and_completes(
    each_store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    task = await run_agent(Runtime(each_store), make_agent(script(SCRIPT)))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "X restarted"
    assert task.goal == "X is fast again"
    assert task.context == "a slow service"
    steps = await each_store.list_steps(task.id)
    assert [(s.index, s.name, s.status) for s in steps] == [
        (0, "look at X", StepStatus.COMPLETED),
        (1, "restart X", StepStatus.COMPLETED),
    ]
    assert [s.validation_instruction for s in steps] == ["check: look at X", "check: restart X"]
    assert task.state.plan == ["look at X", "restart X"]
    restart = next(op for op in await each_store.list_ops(task.id) if op.name == "restart_service")
    assert tools_ledger.invocations() == {
        ("check_status", "X"): 1,
        ("restart_service", restart.idempotency_key): 1,
    }
    assert tools_ledger.effects() == {("restart_service", restart.idempotency_key): 1}


async def test_every_journaled_call_ends_after_it_starts(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(each_store), make_agent(script(SCRIPT)))

    ops = await each_store.list_ops(task.id)
    assert {op.kind for op in ops} >= {"model", "tool", "state"}  # a state change has no attempt to time
    assert all(op.finished_at is not None and op.started_at <= op.finished_at for op in ops), [
        (op.seq, op.name, op.started_at, op.finished_at) for op in ops
    ]


async def test_each_transition_is_an_event(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    kinds = await event_kinds(store, task.id)
    assert is_subsequence(
        [
            "task_created",
            "task_started",
            "plan",
            "step_started",
            "step_completed",
            "step_started",
            "step_completed",
            "task_completed",
        ],
        kinds,
    ), kinds
    for kind in ("plan", "task_completed"):
        assert kinds.count(kind) == 1, kinds
    assert kinds.count("step_started") == kinds.count("step_completed") == 2, kinds
    started = [e for e in await store.list_events(task.id) if e.kind == "step_started"]
    assert [e.data["index"] for e in started] == [0, 1]


async def test_the_model_is_asked_once_per_purpose_and_ordinal(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    for purpose, count in (("plan", 1), ("act", 4), ("verify", 2), ("replan", 0), ("summarize", 0)):
        ops = await model_ops(store, task.id, purpose)
        assert [op.meta["ordinal"] for op in ops] == list(range(count)), purpose
    first_act = (await model_ops(store, task.id, "act"))[0]
    system, user = first_act.input["messages"]
    assert "Goal: X is fast again" in system["content"]
    assert "step 1 of 2: look at X" in system["content"]
    assert user == {"role": "user", "content": "do: look at X"}
    offered = {tool["name"] for tool in first_act.input["tools"]}
    assert {
        "check_status",
        "restart_service",
        "list_files",
        "read_file",
        "write_file",
        "read_artifact",
        "update_state",
    } <= offered
    assert "run_shell" not in offered
    plan_op = (await model_ops(store, task.id, "plan"))[0]
    assert plan_op.input["json_output"] is True
    assert plan_op.input["messages"][-1] == {"role": "user", "content": INSTRUCTION}


async def test_every_message_of_the_steps_is_stored_in_order(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    messages = await store.list_messages(task.id)
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [m.seq for m in messages] == sorted(m.seq for m in messages)
    call: dict[str, Any] = messages[2].tool_calls[0]
    assert call["function"]["name"] == "check_status"
    assert json.loads(call["function"]["arguments"]) == {"service": "X"}
    assert messages[3].tool_call_id == call["id"] and messages[3].name == "check_status"
    assert isinstance(messages[3].content, str) and isinstance(messages[9].content, str)
    assert json.loads(messages[3].content) == {"service": "X", "status": "degraded"}
    assert messages[5].content == "X is degraded"
    assert json.loads(messages[9].content) == {"restarted": "X"}


async def test_a_checkpoint_is_written_as_each_step_completes(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    checkpoints = await store.list_checkpoints(task.id)
    assert [[s.status for s in c.steps] for c in checkpoints] == [
        [StepStatus.COMPLETED, StepStatus.CURRENT],
        [StepStatus.COMPLETED, StepStatus.COMPLETED],
    ]
    verify_seqs = [op.seq for op in await model_ops(store, task.id, "verify")]
    assert [c.last_seq for c in checkpoints] == verify_seqs
    assert checkpoints[-1].state.plan == ["look at X", "restart X"]


async def test_a_step_done_on_its_first_try_counts_one_attempt(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """As the engine's own steps do (``ctx.step`` starts a step at attempt 1)."""
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    assert [s.attempts for s in await store.list_steps(task.id)] == [1, 1]


async def test_the_workspace_exists_while_the_task_runs_and_is_removed_on_success(
    store: StateStore, script: Callable[[dict[str, Any]], str], home: Path
) -> None:
    task = await run_agent(Runtime(store), make_agent(script(SCRIPT)))

    assert task.workspace == str((home / "workspaces" / task.id).resolve())
    write = next(op for op in await store.list_ops(task.id) if op.name == "write_file")
    assert write.output == "wrote 10 characters to notes.md"
    assert not Path(task.workspace).exists()
    assert (home / "workspaces").is_dir()

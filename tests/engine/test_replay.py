"""Replay and stable idempotency keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.records import OpKind, OpStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS, entries
from .support import run_until_crash


async def test_a_resumed_task_replays_completed_ops_instead_of_running_them(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(rt, "sequence", {"ledger": ledger})
    before = await store.list_ops(task_id)
    assert [op.seq for op in before] == [0, 1, 2, 3]  # an idempotent tool caught in flight left no row

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert [len(entries(ledger, label)) for label in ("a", "b", "crash", "c")] == [1, 1, 2, 1]
    after = await store.list_ops(task_id)
    assert [op.output for op in after[:4]] == [op.output for op in before[:4]]
    assert isinstance(task.result, dict)
    assert task.result["a"] == before[0].output
    assert task.result["b"] == before[1].output
    assert task.result["now"] == before[2].output
    assert task.result["uuid"] == before[3].output


async def test_seqs_follow_program_order(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await run_until_crash(rt, "sequence", {"ledger": ledger})
    await Runtime(store).resume(task_id)

    ops = await store.list_ops(task_id)
    assert [(op.seq, op.kind, op.name) for op in ops] == [
        (0, OpKind.TOOL, "record"),
        (1, OpKind.TOOL, "record"),
        (2, OpKind.CLOCK, "now"),
        (3, OpKind.UUID, "uuid"),
        (4, OpKind.TOOL, "crash_once"),
        (5, OpKind.TOOL, "record"),
    ]
    assert [op.input["label"] for op in ops if op.name == "record"] == ["a", "b", "c"]


async def test_parallel_calls_take_seqs_in_call_order_not_completion_order(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await run_until_crash(rt, "parallel", {"ledger": ledger})

    assert [e["label"] for e in entries(ledger) if e["label"] != "crash"] == ["second", "third", "first"]
    ops = await store.list_ops(task_id)
    assert [(op.seq, op.input["label"]) for op in ops[:3]] == [(0, "first"), (1, "second"), (2, "third")]
    assert all(op.status is OpStatus.SUCCEEDED for op in ops[:3])


async def test_replay_of_parallel_calls_is_deterministic(store: StateStore, rt: Runtime, ledger: str) -> None:
    task_id = await run_until_crash(rt, "parallel", {"ledger": ledger})
    recorded = [op.output for op in (await store.list_ops(task_id))[:3]]

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == recorded
    results: Any = task.result
    assert [r["label"] for r in results] == ["first", "second", "third"]
    assert [len(entries(ledger, label)) for label in ("first", "second", "third")] == [1, 1, 1]


async def test_a_different_tool_at_a_recorded_seq_is_a_nondeterminism_error(
    store: StateStore, rt: Runtime, ledger: str, tmp_path: Path
) -> None:
    choice = tmp_path / "choice.txt"
    choice.write_text("record")
    task_id = await run_until_crash(rt, "chooses", {"ledger": ledger, "choice_file": str(choice)})
    choice.write_text("other")

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.FAILED
    assert "NonDeterminism" in (task.error or "")
    assert "record" in (task.error or "") and "other" in (task.error or "")
    assert "operation 0" in (task.error or "")
    assert entries(ledger, "other") == []
    events = await store.list_events(task_id)
    assert events[-1].kind == "task_failed" and "other" in events[-1].message


async def test_idempotency_key_is_task_and_seq_and_stable_across_retries(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(
        f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "keyed", "args": {"fail_times": 1}}
    )

    assert task.status is TaskStatus.COMPLETED
    calls = entries(ledger, "keyed")
    assert [c["attempt"] for c in calls] == [1, 2]
    assert {c["key"] for c in calls} == {f"{task.id}:1"}
    assert task.result == f"{task.id}:1"
    op = await store.get_op(task.id, 1)
    assert op is not None and op.idempotency_key == f"{task.id}:1" and op.attempt == 2

"""``ctx.patched``: workflow code changed between a crash and its resume, on every store."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from ratchet.records import OpKind, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..engine.flows import Crash, entries
from . import versioned_flows
from .versioned_flows import FLOWS


@pytest.fixture
def code(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The version of the code the workers run (1 until a test deploys 2)."""
    monkeypatch.setitem(versioned_flows.CODE, "version", 1)
    return versioned_flows.CODE


async def crash_on_old_code(rt: Runtime, workflow: str, inputs: dict[str, JsonValue]) -> str:
    task_id = await rt.submit(f"{FLOWS}:{workflow}", inputs)
    with pytest.raises(Crash):
        await rt.resume(task_id)
    return task_id


async def test_a_task_crashed_before_the_patch_point_takes_the_new_code(
    store: StateStore, rt: Runtime, ledger: str, code: dict[str, int]
) -> None:
    task_id = await crash_on_old_code(rt, "versioned", {"ledger": ledger, "crash_after": "a"})
    code["version"] = 2

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"labels": ["a", "receipt", "b", "c"]}
    assert [e["label"] for e in entries(ledger)] == ["a", "crash", "crash", "receipt", "b", "c"]
    ops = await store.list_ops(task_id)
    assert [(op.seq, op.kind, op.name) for op in ops][2] == (2, OpKind.PATCH, "patched:send-receipt")


async def test_a_task_that_recorded_past_the_patch_point_keeps_the_old_code(
    store: StateStore, rt: Runtime, ledger: str, code: dict[str, int]
) -> None:
    task_id = await crash_on_old_code(rt, "versioned", {"ledger": ledger, "crash_after": "b"})
    code["version"] = 2

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"labels": ["a", "b", "c"]}
    assert [e["label"] for e in entries(ledger)] == ["a", "b", "crash", "crash", "c"]  # nothing twice
    assert all(op.kind is not OpKind.PATCH for op in await store.list_ops(task_id))


async def test_the_new_code_replays_its_own_marker(
    store: StateStore, rt: Runtime, ledger: str, code: dict[str, int]
) -> None:
    code["version"] = 2
    task_id = await crash_on_old_code(rt, "versioned", {"ledger": ledger, "crash_after": "b"})
    marker = [op for op in await store.list_ops(task_id) if op.kind is OpKind.PATCH]

    task = await Runtime(store).resume(task_id)

    assert task.result == {"labels": ["a", "receipt", "b", "c"]}
    assert [op.seq for op in marker] == [1]
    assert [e["label"] for e in entries(ledger)].count("receipt") == 1


async def test_a_removed_patch_call_replays_past_its_marker(
    store: StateStore, rt: Runtime, ledger: str, code: dict[str, int]
) -> None:
    code["version"] = 2
    task_id = await crash_on_old_code(rt, "versioned", {"ledger": ledger, "crash_after": "b"})
    code["version"] = 3  # the patch call removed, its new code kept: the marker is stepped over

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"labels": ["a", "receipt", "b", "c"]}
    assert [e["label"] for e in entries(ledger)] == ["a", "receipt", "b", "crash", "crash", "c"]


async def test_a_change_without_patched_fails_naming_the_seq_both_calls_and_the_cure(
    store: StateStore, rt: Runtime, ledger: str, code: dict[str, int]
) -> None:
    task_id = await crash_on_old_code(rt, "rewritten", {"ledger": ledger})
    code["version"] = 2

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.FAILED
    assert task.error is not None
    for part in ("operation 1", "tool record", "tool other", "ctx.patched("):
        assert part in task.error
    assert [e["label"] for e in entries(ledger)] == ["a", "b", "crash"]

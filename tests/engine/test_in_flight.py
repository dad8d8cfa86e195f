"""A run cancelled while its tool runs (a program's Ctrl-C): the tool finishes, and what it did is journaled.

`asyncio.run` answers Ctrl-C by cancelling the program's task; these tests
cancel the task that runs a workflow the same way, while its tool waits for a
gate file, then open the gate. The real programs, signalled, are in
tests/cli/test_cli_signals_in_flight.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import JsonValue

from ratchet.engine.calls.in_flight import cut_short
from ratchet.records import Operation, OpStatus, Task, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import entries
from .in_flight_flows import IN_FLIGHT_FLOWS

TOOLS = ["deliver", "deliver_async"]
WAIT = 60.0  # the bound of every wait: generous, for a loaded machine


async def _stopped_in_flight(
    rt: Runtime, caplog: pytest.LogCaptureFixture, tmp_path: Path, ledger: str, tool_name: str, outcome: str
) -> str:
    """Run a delivery; cancel its run while the tool runs; open the gate once the run waits for the tool."""
    gate = tmp_path / "gate"
    running, task_id = await _start(rt, tmp_path, ledger, tool_name, outcome)
    running.cancel()
    async with asyncio.timeout(WAIT):
        while not any("stopping once" in record.getMessage() for record in caplog.records):
            await asyncio.sleep(0.01)
    gate.touch()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(WAIT):
            await running
    return task_id


async def _start(
    rt: Runtime, tmp_path: Path, ledger: str, tool_name: str, outcome: str
) -> tuple[asyncio.Task[Task], str]:
    """Run a delivery in a task of its own; return it, and the task's id, once the tool runs."""
    inputs: dict[str, JsonValue] = {
        "tool_name": tool_name,
        "ledger": ledger,
        "gate": str(tmp_path / "gate"),
        "outcome": outcome,
    }
    task_id = await rt.submit(f"{IN_FLIGHT_FLOWS}:delivers", inputs)
    running = asyncio.create_task(rt.resume(task_id))
    async with asyncio.timeout(WAIT):
        while not entries(ledger, "deliver"):  # the tool waits at its gate now
            await asyncio.sleep(0.01)
    return running, task_id


async def _the_call(store: StateStore, task_id: str) -> Operation:
    op = await store.get_op(task_id, 0)
    assert op is not None
    return op


@pytest.mark.parametrize("tool_name", TOOLS)
async def test_what_the_tool_returned_is_journaled_and_not_run_again(
    store: StateStore,
    rt: Runtime,
    caplog: pytest.LogCaptureFixture,
    ledger: str,
    tmp_path: Path,
    tool_name: str,
) -> None:
    task_id = await _stopped_in_flight(rt, caplog, tmp_path, ledger, tool_name, "returns")

    op = await _the_call(store, task_id)
    assert (op.status, op.output) == (OpStatus.SUCCEEDED, "delivered")

    task = await rt.resume(task_id)

    assert (task.status, task.result) == (TaskStatus.COMPLETED, "delivered")
    assert len(entries(ledger, "deliver")) == 1


@pytest.mark.parametrize("tool_name", TOOLS)
async def test_a_retryable_failure_is_journaled_as_an_attempt_and_the_next_run_retries(
    store: StateStore,
    rt: Runtime,
    caplog: pytest.LogCaptureFixture,
    ledger: str,
    tmp_path: Path,
    tool_name: str,
) -> None:
    task_id = await _stopped_in_flight(rt, caplog, tmp_path, ledger, tool_name, "fails, retryable")

    op = await _the_call(store, task_id)
    assert (op.status, op.attempt, op.retry_pending) == (OpStatus.FAILED, 1, True)
    assert op.error == "the line dropped"

    task = await rt.resume(task_id)

    assert (task.status, task.result) == (TaskStatus.COMPLETED, "delivered")
    assert [entry["attempt"] for entry in entries(ledger, "deliver")] == [1, 2]


@pytest.mark.parametrize("tool_name", TOOLS)
async def test_a_final_failure_is_journaled_and_fails_the_task_on_resume(
    store: StateStore,
    rt: Runtime,
    caplog: pytest.LogCaptureFixture,
    ledger: str,
    tmp_path: Path,
    tool_name: str,
) -> None:
    task_id = await _stopped_in_flight(rt, caplog, tmp_path, ledger, tool_name, "fails for good")

    op = await _the_call(store, task_id)
    assert (op.status, op.retry_pending, op.error_type) == (OpStatus.FAILED, False, "NonRetryableError")

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.FAILED
    assert "the carrier refused the parcel" in (task.error or "")
    assert len(entries(ledger, "deliver")) == 1


@pytest.mark.parametrize("tool_name", TOOLS)
async def test_a_run_cut_short_does_not_wait_for_its_tool_and_leaves_the_call_in_doubt(
    store: StateStore, rt: Runtime, ledger: str, tmp_path: Path, tool_name: str
) -> None:
    running, task_id = await _start(rt, tmp_path, ledger, tool_name, "returns")

    cut_short(running)  # as a lost lease, or a worker's grace run out, does

    try:
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(WAIT):
                await running  # the gate is shut: it ends only if it does not wait for the tool
    finally:
        (tmp_path / "gate").touch()  # a plain tool's thread runs on until the gate opens
    assert (await _the_call(store, task_id)).status is OpStatus.STARTED


@pytest.mark.parametrize("tool_name", TOOLS)
async def test_a_stop_while_two_calls_run_at_once_waits_for_both_and_starts_no_other(
    store: StateStore,
    rt: Runtime,
    caplog: pytest.LogCaptureFixture,
    ledger: str,
    tmp_path: Path,
    tool_name: str,
) -> None:
    gate = tmp_path / "gate"
    inputs: dict[str, JsonValue] = {
        "tool_name": tool_name,
        "ledger": ledger,
        "gate": str(gate),
        "outcome": "returns",
    }
    task_id = await rt.submit(f"{IN_FLIGHT_FLOWS}:delivers_twice", inputs)
    running = asyncio.create_task(rt.resume(task_id))
    async with asyncio.timeout(WAIT):
        while len(entries(ledger, "deliver")) < 2:  # both tools wait at the gate now
            await asyncio.sleep(0.01)

    running.cancel()
    async with asyncio.timeout(WAIT):
        while sum("stopping once" in record.getMessage() for record in caplog.records) < 2:
            await asyncio.sleep(0.01)
    gate.touch()
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(WAIT):
            await running

    for seq in (0, 1):
        op = await store.get_op(task_id, seq)
        assert op is not None
        assert (op.status, op.output) == (OpStatus.SUCCEEDED, "delivered")
    assert await store.get_op(task_id, 2) is None  # the third call never started
    assert len(entries(ledger, "deliver")) == 2

    task = await rt.resume(task_id)

    assert (task.status, task.result) == (TaskStatus.COMPLETED, ["delivered"] * 3)
    assert len(entries(ledger, "deliver")) == 3

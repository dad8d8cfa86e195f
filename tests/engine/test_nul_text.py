"""Text holding a NUL character, which PostgreSQL's text columns refuse, is recorded on every store."""

from __future__ import annotations

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS


async def test_a_tool_error_quoting_binary_bytes_is_recorded_and_the_workflow_sees_it(
    store: StateStore,
) -> None:
    """On PostgreSQL the workflow met a StoreError instead (the error's row could not be written)."""
    async with Runtime(store) as rt:
        task = await rt.run(f"{FLOWS}:quotes_binary")

    assert (task.status, task.result) == (TaskStatus.COMPLETED, "OperationFailed"), task.error
    [op] = await store.list_ops(task.id)
    assert op.error is not None  # as the tool said it; a SQL store keeps the NUL as U+FFFD
    assert op.error.replace("\ufffd", "\x00") == "cannot decode b'\x00\x01' at 0"
    failed = [e for e in await store.list_events(task.id) if e.kind == "tool_failed"]
    assert failed and "cannot decode" in failed[0].message

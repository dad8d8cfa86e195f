"""A full disk under the workspace stops the agent's task resumable, as a full disk under its store does.

The workspaces (RATCHET_HOME) live on a small disk of their own
(tests/helpers/disk.py: a real tmpfs where the tests may mount one), the store
beside it. When the disk is full, `write_file` (no room for the bytes) or the
making of the workspace (no inode for the directory) meets ENOSPC: the task
stays running, its step open, with a ``store_failed`` event saying where, and
once space is freed, resuming it completes it, with the file written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.errors import StoreError
from ratchet.records import OpStatus
from ratchet.store import StateStore

from ..helpers.disk import SmallDisk
from ..helpers.scripts import calls, plan, say
from .support import make_agent, run_agent

NOTES = "the disk filled up before these notes were written\n" * 10_000  # 500 kB: more than is left


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    """RATCHET_HOME on a small disk of its own (the store is not on it)."""
    small = SmallDisk(tmp_path / "home", size="1m", inodes=64)
    if not small.real:
        small.close()
        pytest.skip("needs a file system of its own to fill (a tmpfs, mounted as root)")
    monkeypatch.setenv("RATCHET_HOME", str(small.directory))
    try:
        yield small
    finally:
        small.close()


def _agent(script: Callable[[dict[str, Any]], str], notes: str = NOTES) -> Any:
    entries = {
        "plan": [plan("take notes", check="")],
        "act": [calls(("write_file", {"path": "notes/today.md", "content": notes})), say("noted")],
    }
    return make_agent(script(entries))


async def _stopped_resumable(store: StateStore, task_id: str) -> None:
    task = await store.get_task(task_id)
    assert (task.status, task.error) == (TaskStatus.RUNNING, None)
    kinds = [event.kind for event in await store.list_events(task_id)]
    assert "task_failed" not in kinds and "step_failed" not in kinds
    [said] = [event for event in await store.list_events(task_id) if event.kind == "store_failed"]
    assert "no room left on the disk of the task's workspace" in said.message
    assert f"ratchet resume {task_id}" in said.message
    assert OpStatus.FAILED not in {op.status for op in await store.list_ops(task_id)}


async def test_write_file_on_a_full_disk_stops_the_task_resumable_and_resume_writes_it(
    store: StateStore, disk: SmallDisk, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    disk.fill(leave=64 * 1024)  # room for the workspace, not for the notes

    with pytest.raises(StoreError, match="disk of the task's workspace") as stopped:
        await run_agent(rt, _agent(script))

    assert type(stopped.value).__name__ == "WorkspaceFull"  # a full store's kind (`StoreFull`)
    [task_id] = [task.id for task in await store.list_tasks()]
    await _stopped_resumable(store, task_id)
    assert "write_file" not in {op.name for op in await store.list_ops(task_id)}  # it runs again on resume

    disk.free()
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    [written] = [op for op in await store.list_ops(task_id) if op.name == "write_file"]
    assert written.status is OpStatus.SUCCEEDED


async def test_no_room_to_make_the_workspace_stops_the_task_resumable(
    store: StateStore, disk: SmallDisk, script: Callable[[dict[str, Any]], str]
) -> None:
    rt = Runtime(store)
    (disk.directory / "workspaces").mkdir()
    disk.use_up_inodes()  # not one directory more

    with pytest.raises(StoreError, match="disk of the task's workspace") as stopped:
        await run_agent(rt, _agent(script, notes="short"))
    assert type(stopped.value).__name__ == "WorkspaceFull"

    [task_id] = [task.id for task in await store.list_tasks()]
    await _stopped_resumable(store, task_id)

    disk.free()
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error

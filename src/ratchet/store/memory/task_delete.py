"""Deleting a task (`TaskDeleteOps`) in the memory store, as part of its operations."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from ..ops.task_delete import TaskDeleteOps, check_deletable
from .undo import UndoLog

if TYPE_CHECKING:
    from ..ops import StoreOps

__all__ = ["MemoryTaskDelete"]


class MemoryTaskDelete(TaskDeleteOps, UndoLog):
    """Removes a task's rows from the memory store's tables (JSON text; its journal holds no contents)."""

    tasks: dict[str, str]
    steps: dict[str, dict[int, str]]
    ops: dict[str, dict[int, str]]
    messages: dict[str, dict[int, str]]
    events: dict[str, dict[int, str]]
    checkpoints: dict[str, dict[int, str]]
    lease_claims: dict[str, dict[int, str]]
    inbox: dict[str, dict[int, str]]
    streams: dict[str, dict[int, str]]
    grants: dict[str, dict[str, str]]
    leases: dict[str, str]
    artifacts: dict[str, tuple[str, bytes]]
    triggers: dict[int, str]
    approvals: dict[tuple[str, int], str]

    async def delete_task(self, task_id: str) -> None:
        await check_deletable(cast("StoreOps", self), task_id)  # always mixed into a StoreOps
        by_task = (
            self.steps,
            self.ops,
            self.messages,
            self.events,
            self.checkpoints,
            self.lease_claims,
            self.inbox,
            self.streams,
            self.grants,
            self.leases,
        )
        for table in by_task:
            self._delete(table, task_id)
        for artifact_id, (record, _) in list(self.artifacts.items()):
            if json.loads(record)["task_id"] == task_id:
                self._delete(self.artifacts, artifact_id)
        for trigger_id, record in list(self.triggers.items()):
            if json.loads(record).get("task_id") == task_id:
                self._delete(self.triggers, trigger_id)
        for key in [key for key in self.approvals if key[0] == task_id]:
            self._delete(self.approvals, key)
        self._delete(self.tasks, task_id)

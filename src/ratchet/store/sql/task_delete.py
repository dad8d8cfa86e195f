"""Deleting a task (`TaskDeleteOps`) in every SQL store, as part of `SqlOps`."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..ops.task_delete import TaskDeleteOps, check_deletable
from .driver import Driver

if TYPE_CHECKING:
    from ..ops import StoreOps

__all__ = ["TASK_TABLES", "SqlTaskDelete"]

TASK_TABLES = (
    "steps",
    "operations",
    "contents",
    "messages",
    "events",
    "artifacts",
    "triggers",
    "checkpoints",
    "approvals",
    "inbox",
    "streams",
    "task_grants",
    "lease_claims",
    "leases",
    "task_labels",
    "task_text",
    "tasks",  # last: a reader that finds the task finds all of it until the transaction commits
)
"""The tables a task's rows are in (``delete_task_<table>`` in queries.sql), but the change log."""


class SqlTaskDelete(TaskDeleteOps):
    """Removes a task's rows, one named query per table."""

    _d: Driver

    async def delete_task(self, task_id: str) -> None:
        await check_deletable(cast("StoreOps", self), task_id)  # always mixed into a StoreOps
        for table in TASK_TABLES:
            await self._d.execute(f"delete_task_{table}", {"task_id": task_id})

"""What a task listing asks for (`TaskFilter`) and what it gets back (`TaskRow`).

`ratchet tasks` and ``GET /api/tasks`` read tasks through one store operation
(`list_task_rows`, store/ops/task_rows.py) that filters, orders and pages in
the database and returns only the columns a listing shows, never the whole
record: listing 100,000 tasks reads as many rows as the page holds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from .task import TaskStatus, WaitReason

__all__ = ["ALL_TASKS", "TaskFilter", "TaskRow"]


@dataclass(frozen=True)
class TaskFilter:
    """Which tasks a listing wants; a field left None (or empty) does not filter.

    Attributes:
        statuses: any of these statuses.
        name: exactly this task name.
        agent: exactly this agent name.
        parent_id: the children of this task.
        since: created at or after this time.
        until: created before this time.
    """

    statuses: frozenset[TaskStatus] = frozenset()
    name: str | None = None
    agent: str | None = None
    parent_id: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    def matches(self, row: TaskRow) -> bool:
        """Whether `row` passes every filter (the memory store's reference for the SQL)."""
        return (
            (not self.statuses or row.status in self.statuses)
            and (self.name is None or row.name == self.name)
            and (self.agent is None or row.agent == self.agent)
            and (self.parent_id is None or row.parent_id == self.parent_id)
            and (self.since is None or row.created_at >= _utc(self.since))
            and (self.until is None or row.created_at < _utc(self.until))
        )


ALL_TASKS = TaskFilter()
"""The filter that keeps every task."""


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment


@dataclass(frozen=True)
class TaskRow:
    """A task as a listing shows it: the columns the store keeps beside its record.

    ``name``, ``agent`` and ``updated_at`` are None only for a row whose record
    could not be read when the schema gained those columns (version 11).
    """

    id: str
    name: str | None
    status: TaskStatus
    waiting_on: WaitReason | None
    agent: str | None
    parent_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @property
    def status_text(self) -> str:
        """The status as people read it: ``waiting(approval)``, ``running``."""
        return f"{self.status}({self.waiting_on})" if self.waiting_on else str(self.status)

"""`TaskChange`: one entry of the store's log of task changes (a task created, its status moved).

Every store keeps these in one log with a total order (`position`, from 1,
gapless in the order the changes became visible), so a reader that has seen
everything up to position N and asks for what comes after N never misses a
change nor sees one twice. The HTTP API's global live stream
(``ratchet.serve.live``) is this log.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import Field

from .base import NonEmpty, Record, utcnow
from .task import Task, TaskStatus, WaitReason

__all__ = ["TaskChange", "TaskChangeKind"]


class TaskChangeKind(StrEnum):
    CREATED = "created"
    STATUS = "status"  # its status (or what a waiting task waits on) moved


class TaskChange(Record):
    """A task as it was right after it was created or its status moved.

    ``position`` is 0 until the store logs the change.
    """

    position: int = Field(default=0, ge=0)
    kind: TaskChangeKind
    task_id: NonEmpty
    name: str
    agent: str
    status: TaskStatus
    waiting_on: WaitReason | None = None
    parent_id: str | None = None
    time: dt.datetime = Field(default_factory=utcnow)

    @classmethod
    def of(cls, task: Task, kind: TaskChangeKind) -> TaskChange:
        """The change `kind` of `task`, as the task now is."""
        return cls(
            kind=kind,
            task_id=task.id,
            name=task.name,
            agent=task.agent,
            status=task.status,
            waiting_on=task.waiting_on,
            parent_id=task.parent_id,
            time=task.updated_at if kind is TaskChangeKind.STATUS else task.created_at,
        )

    @property
    def status_text(self) -> str:
        """The status as people read it: ``waiting(approval)``, ``running``."""
        return f"{self.status}({self.waiting_on})" if self.waiting_on else str(self.status)

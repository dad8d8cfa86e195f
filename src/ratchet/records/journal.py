"""The journal: each call a task made (`Operation`) and the checkpoints it resumes and forks from."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from pydantic import Field, model_validator

from .base import NonEmpty, Record, utcnow
from .plan import Step
from .state import AgentState
from .task import Task

__all__ = ["Checkpoint", "OpKind", "OpStatus", "Operation"]


class OpKind(StrEnum):
    MODEL = "model"
    TOOL = "tool"
    CLOCK = "clock"
    UUID = "uuid"
    SLEEP = "sleep"
    STATE = "state"
    QUESTION = "question"
    PATCH = "patch"  # a ctx.patched() marker (engine/versioning.py)
    RECEIVE = "receive"
    CHILD = "child"


class OpStatus(StrEnum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Operation(Record):
    """One journaled call, keyed by ``(task_id, seq)``.

    A ``failed`` operation with ``next_attempt_at`` set is waiting to be tried
    again (attempt ``attempt + 1`` at that time); without it, it failed for good.
    ``meta`` holds what the call reported besides its output (token usage, the
    scripted model's ordinal).

    ``input``, ``output`` and ``meta`` hold JSON values; they are checked when
    stored (encoded as JSON), not on every construction: the journal builds
    two of these per call on its hottest path.
    """

    task_id: NonEmpty
    seq: int = Field(ge=0)
    kind: OpKind
    name: NonEmpty
    attempt: int = Field(default=1, ge=1)
    idempotency_key: str
    status: OpStatus = OpStatus.STARTED
    input: Any = None
    output: Any = None
    error: str | None = None
    error_type: str | None = None
    next_attempt_at: dt.datetime | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    started_at: dt.datetime = Field(default_factory=utcnow)
    finished_at: dt.datetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _starts_when_it_ends_unless_told(cls, data: Any) -> Any:
        # An operation written once, finished (a state change, a child started), has no start of
        # its own; a default read after its `finished_at` would put its start after its end.
        if isinstance(data, dict) and "started_at" not in data and data.get("finished_at") is not None:
            return {**data, "started_at": data["finished_at"]}
        return data

    @property
    def is_finished(self) -> bool:
        return self.status is not OpStatus.STARTED

    @property
    def retry_pending(self) -> bool:
        return self.status is OpStatus.FAILED and self.next_attempt_at is not None


class Checkpoint(Record):
    """A snapshot of a loop's position, a resume and fork point; the store numbers it from 1 per task."""

    task_id: NonEmpty
    number: int = Field(default=0, ge=0)
    created_at: dt.datetime = Field(default_factory=utcnow)
    last_seq: int = Field(default=-1, ge=-1)
    message_cursor: int = Field(default=0, ge=0)
    task: Task
    steps: list[Step] = Field(default_factory=list)
    state: AgentState = Field(default_factory=AgentState)

"""`Task`: one piece of work, and its status machine.

A task goes ``queued -> running -> (waiting <-> running) -> completed |
failed | cancelled``; an ended one never changes.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from pydantic import Field, JsonValue

from ..errors import InvalidTransition
from ..limits import PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN
from ..policy import Budget
from .base import NonEmpty, Record, utcnow
from .state import AgentState

__all__ = ["Task", "TaskStatus", "WaitReason", "check_task_move"]


class TaskStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL_TASK


class WaitReason(StrEnum):
    """What a waiting task waits on."""

    APPROVAL = "approval"
    INPUT = "input"
    TIMER = "timer"
    IN_DOUBT = "in_doubt"
    CODE = "code"  # its code or workspace is refused or missing here: an operator acts, then resumes
    STALE = "stale"  # its newest checkpoint is older than its policy trusts: a person checks, then forces
    MESSAGE = "message"  # `ctx.receive` found no message: a send (or its timeout) wakes it
    CHILDREN = "children"  # on child tasks: the end of each wakes it (a trigger), no person needed
    LIMIT = "limit"  # a model call's turn under a shared limit (docs/rate-limits.md): a trigger wakes it

    @property
    def needs_person(self) -> bool:
        return self not in (WaitReason.TIMER, WaitReason.MESSAGE, WaitReason.CHILDREN, WaitReason.LIMIT)


_TERMINAL_TASK = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})

_TASK_MOVES: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.QUEUED: frozenset({TaskStatus.RUNNING, TaskStatus.FAILED, TaskStatus.CANCELLED}),
    TaskStatus.RUNNING: frozenset(
        {TaskStatus.WAITING, TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
    ),
    TaskStatus.WAITING: frozenset(
        {TaskStatus.RUNNING, TaskStatus.WAITING, TaskStatus.FAILED, TaskStatus.CANCELLED}
    ),
    TaskStatus.COMPLETED: frozenset(),
    TaskStatus.FAILED: frozenset(),
    TaskStatus.CANCELLED: frozenset(),
}


def check_task_move(task_id: str, old: TaskStatus, new: TaskStatus) -> None:
    """Raise `InvalidTransition` unless a task may go from `old` to `new`.

    Staying in a status is a move too: allowed, except for a terminal one.
    """
    if new not in _TASK_MOVES[old] and (new != old or old.is_terminal):
        raise InvalidTransition(f"task {task_id}: cannot go from {old} to {new}")


class Task(Record):
    """One piece of work. Its steps are kept as separate `Step` records.

    ``write_mark`` is the engine's bookkeeping: the journal position (and
    count within it) of the last progress write (events, steps, messages,
    checkpoints) a run made, so that a resume does not make it again.
    """

    id: NonEmpty
    name: NonEmpty
    instruction: str
    agent: str = "default"
    status: TaskStatus = TaskStatus.QUEUED
    waiting_on: WaitReason | None = None
    goal: str | None = None
    inputs_params: dict[str, JsonValue] = Field(default_factory=dict)
    context: str | None = None
    result: JsonValue = None
    error: str | None = None
    deadline: dt.datetime | None = None
    budget: Budget = Field(default_factory=Budget)
    workspace: str | None = None
    workflow: str | None = None
    model: str | None = None
    # The models a call falls back to, in order, when `model` fails for good (engine/calls/fallback.py);
    # with `fallback_on_pressure`, also once the task's budget is 80 % used. Sealed with `model`.
    fallback_models: list[str] = Field(default_factory=list)
    fallback_on_pressure: bool = False
    # The HMAC over the fields above that name code, made by whoever created the task (trust/seal.py).
    seal: str | None = None
    state: AgentState = Field(default_factory=lambda: AgentState())
    forked_from: str | None = None
    parent_id: str | None = None  # the task that started this one as its child (engine/children.py)
    # Given when the task is made (limits.check_labels), to find it by; they never change.
    labels: dict[str, str] = Field(default_factory=dict)
    # US dollars its priced model calls cost, its child tasks' included, as its run last
    # recorded them (with each write of the task): final once it ended.
    cost: float = Field(default=0.0, ge=0)
    write_mark: tuple[int, int] | None = None
    created_at: dt.datetime = Field(default_factory=utcnow)
    updated_at: dt.datetime = Field(default_factory=utcnow)
    started_at: dt.datetime | None = None
    approval_timeout: float | None = Field(default=None, gt=0)
    priority: int = Field(default=PRIORITY_DEFAULT, ge=PRIORITY_MIN, le=PRIORITY_MAX)  # lower first
    # The queue it runs in, and its partition there: the queue's concurrency limit holds per
    # partition when one is given (docs/rate-limits.md). Given when it is made; they never change.
    queue: str | None = None
    partition: str | None = None
    # The version of the code it started on (engine/code_version.py): a worker of another version
    # leaves it, or runs it once its journal replays there. None: made before versions were kept.
    code_version: str | None = None

    def model_post_init(self, __context: Any) -> None:
        if (self.status is TaskStatus.WAITING) != (self.waiting_on is not None):
            raise ValueError("waiting_on is set exactly when status is waiting")

    def transition(self, status: TaskStatus, *, waiting_on: WaitReason | None = None, **changes: Any) -> Task:
        """Return this task moved to `status`, with `changes` applied.

        Raises:
            InvalidTransition: the status machine does not allow the move.
        """
        status = TaskStatus(status)
        if status not in _TASK_MOVES[self.status]:
            raise InvalidTransition(f"task {self.id}: cannot go from {self.status} to {status}")
        if status is TaskStatus.WAITING and waiting_on is None:
            raise InvalidTransition(f"task {self.id}: waiting must say on what")
        if status is not TaskStatus.WAITING and waiting_on is not None:
            raise InvalidTransition(f"task {self.id}: only a waiting task waits on something")
        update = {"status": status, "waiting_on": waiting_on, "updated_at": utcnow(), **changes}
        return self.model_validate({**self.model_dump(), **update})

    @property
    def status_text(self) -> str:
        """The status as people read it: ``waiting(approval)``, ``running``."""
        return f"{self.status}({self.waiting_on})" if self.waiting_on else str(self.status)

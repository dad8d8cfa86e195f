"""The records Ratchet keeps: typed, validated, frozen, with a JSON round trip.

Every record is a frozen pydantic model. Changing one makes a new one
(``record.model_copy(update=...)``, or the transition helpers below, which
enforce the status machines: a task goes ``queued -> running -> (waiting <->
running) -> completed | failed | cancelled`` and a step ``pending -> current
-> completed | failed | skipped | cancelled``; an ended one never changes).
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from .errors import InvalidTransition
from .limits import PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN
from .policy import Budget

__all__ = [
    "AgentState",
    "Approval",
    "ApprovalStatus",
    "Artifact",
    "ArtifactRef",
    "Checkpoint",
    "Constraints",
    "Event",
    "Fact",
    "Lease",
    "Message",
    "OpKind",
    "OpStatus",
    "Operation",
    "Plan",
    "PlanStep",
    "RiskLevel",
    "Session",
    "Severity",
    "Step",
    "StepStatus",
    "Task",
    "TaskStatus",
    "Trigger",
    "WaitReason",
    "utcnow",
]


def utcnow() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return dt.datetime.now(dt.UTC)


class Record(BaseModel):
    """Base of every record: frozen, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.model_validate_json(text)


NonEmpty = Annotated[str, Field(min_length=1)]

# --------------------------------------------------------------------------- tasks


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

    @property
    def needs_person(self) -> bool:
        return self not in (WaitReason.TIMER, WaitReason.MESSAGE, WaitReason.CHILDREN)


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
    # The HMAC over the fields above that name code, made by whoever created the task (code_seal.py).
    seal: str | None = None
    state: AgentState = Field(default_factory=lambda: AgentState())
    forked_from: str | None = None
    parent_id: str | None = None  # the task that started this one as its child (engine/children.py)
    write_mark: tuple[int, int] | None = None
    created_at: dt.datetime = Field(default_factory=utcnow)
    updated_at: dt.datetime = Field(default_factory=utcnow)
    started_at: dt.datetime | None = None
    approval_timeout: float | None = Field(default=None, gt=0)
    priority: int = Field(default=PRIORITY_DEFAULT, ge=PRIORITY_MIN, le=PRIORITY_MAX)  # lower first

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


class StepStatus(StrEnum):
    PENDING = "pending"
    CURRENT = "current"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self not in (StepStatus.PENDING, StepStatus.CURRENT)


_STEP_MOVES: dict[StepStatus, frozenset[StepStatus]] = {
    StepStatus.PENDING: frozenset({StepStatus.CURRENT, StepStatus.SKIPPED, StepStatus.CANCELLED}),
    StepStatus.CURRENT: frozenset(
        {StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.CANCELLED}
    ),
    StepStatus.COMPLETED: frozenset(),
    StepStatus.FAILED: frozenset(),
    StepStatus.SKIPPED: frozenset(),
    StepStatus.CANCELLED: frozenset(),
}


def check_step_move(step: str, old: StepStatus, new: StepStatus) -> None:
    """Raise `InvalidTransition` unless a step may go from `old` to `new` (or stay, if not ended)."""
    if new not in _STEP_MOVES[old] and (new != old or old.is_terminal):
        raise InvalidTransition(f"{step}: cannot go from {old} to {new}")


class Step(Record):
    """One planned step of a task."""

    task_id: NonEmpty
    index: int = Field(ge=0)
    name: NonEmpty
    description: str = ""
    action_instruction: str = ""
    validation_instruction: str = ""
    status: StepStatus = StepStatus.PENDING
    failure_message: str | None = None
    attempts: int = Field(default=0, ge=0)

    @property
    def label(self) -> str:
        return f"step {self.index} of task {self.task_id}"

    def transition(self, status: StepStatus, **changes: Any) -> Step:
        """Return this step moved to `status`.

        Raises:
            InvalidTransition: the status machine does not allow the move.
        """
        status = StepStatus(status)
        if status not in _STEP_MOVES[self.status]:
            raise InvalidTransition(f"{self.label}: cannot go from {self.status} to {status}")
        return self.model_validate({**self.model_dump(), "status": status, **changes})


class PlanStep(Record):
    """A step as the planner model writes it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    step_name: NonEmpty
    description: str = ""
    action_instruction: str = ""
    validation_instruction: str = ""


class Plan(Record):
    """What the planner returns; validated, never trusted. Extra keys are ignored (docs/agent.md)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    goal: str | None = None
    inputs_params: JsonValue = None  # any JSON: models write a string as often as an object
    context: JsonValue = None
    steps: list[PlanStep] = Field(min_length=1)


# --------------------------------------------------------------------------- journal


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


class Message(Record):
    """One message of a conversation thread (a task's or a session's history)."""

    thread_id: NonEmpty
    seq: int = Field(default=0, ge=0)
    role: Literal["system", "user", "assistant", "tool"]
    content: JsonValue = None
    tool_calls: list[dict[str, JsonValue]] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    created_at: dt.datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- agent state


class RiskLevel(StrEnum):
    READ_ONLY = "read_only"
    WRITE_LOCAL = "write_local"
    EXTERNAL_ACTION = "external_action"


class HumanInTheLoop(Record):
    required_for_risk_levels: list[RiskLevel] = Field(default_factory=lambda: [RiskLevel.EXTERNAL_ACTION])


class Constraints(Record):
    human_in_the_loop: HumanInTheLoop = Field(default_factory=HumanInTheLoop)


class Fact(Record):
    key: NonEmpty
    value: JsonValue
    source: str = "agent"


class ArtifactRef(Record):
    """What the prompt carries of an artifact: its id and summary, never its body."""

    artifact_id: NonEmpty
    type: str
    summary: str
    bytes: int = Field(ge=0)
    step: int | None = Field(default=None, ge=0)  # the index of the step that made it


class AgentState(Record):
    """The task's working memory. Changed only by applying a `ratchet.state_patch.StatePatch`."""

    goal: str | None = None
    constraints: Constraints = Field(default_factory=Constraints)
    budget: Budget = Field(default_factory=Budget)
    plan: list[str] = Field(default_factory=list)
    known_facts: list[Fact] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    risk_flags: list[str] = Field(default_factory=list)


class Artifact(Record):
    """A large value kept out of the prompt; its body is read separately."""

    id: NonEmpty
    task_id: NonEmpty
    type: str
    summary: str
    bytes: int = Field(ge=0)
    created_at: dt.datetime = Field(default_factory=utcnow)
    step: int | None = Field(default=None, ge=0)  # the index of the step that made it

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(artifact_id=self.id, **self.model_dump(exclude={"id", "task_id", "created_at"}))


# --------------------------------------------------------------------------- progress


class Severity(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class Event(Record):
    """An append-only record of a task's progress, for people. ``seq`` is set by the store."""

    task_id: NonEmpty
    seq: int = Field(default=0, ge=0)
    time: dt.datetime = Field(default_factory=utcnow)
    kind: NonEmpty
    severity: Severity = Severity.INFO
    message: str
    display_message: str | None = None
    data: dict[str, JsonValue] = Field(default_factory=dict)


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"


class Approval(Record):
    """A person's decision on one tool call, keyed like the journal by ``(task_id, seq)``.

    ``arguments`` are the call's as the model gave them; ``edited_arguments``,
    when a person changed them, are what the tool runs with.
    """

    task_id: NonEmpty
    seq: int = Field(ge=0)
    tool: NonEmpty
    arguments: JsonValue = None
    step: int | None = None
    why: str = ""
    status: ApprovalStatus = ApprovalStatus.PENDING
    edited_arguments: dict[str, JsonValue] | None = None
    reason: str | None = None
    requested_at: dt.datetime = Field(default_factory=utcnow)
    decided_at: dt.datetime | None = None


class Trigger(Record):
    """A durable wake-up. ``id`` is set by the store; lower ``priority`` fires first (None: the task's)."""

    id: int = 0
    fire_at: dt.datetime = Field(default_factory=utcnow)
    priority: int | None = Field(default=None, ge=PRIORITY_MIN, le=PRIORITY_MAX)
    task_id: str | None = None
    session_id: str | None = None
    kind: NonEmpty
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    dedupe_key: str | None = None


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


class Session(Record):
    """A long-lived conversation and its persistent ``state``.

    ``version`` grows by one on every write; a write based on an older version
    is refused (optimistic concurrency).
    """

    id: NonEmpty
    state: dict[str, JsonValue] = Field(default_factory=dict)
    version: int = Field(default=0, ge=0)
    created_at: dt.datetime = Field(default_factory=utcnow)
    updated_at: dt.datetime = Field(default_factory=utcnow)


class Lease(Record):
    """A worker's claim on a task. ``token`` only grows, one step per claim.

    ``granted_at`` is when the claim was made; ``took_over`` says it was made
    over a lease that was still live (its holder was known to be gone);
    ``renewed_at`` is when its holder's heartbeat last renewed it (None: not
    since it was granted).
    """

    task_id: NonEmpty
    owner: NonEmpty
    token: int = Field(ge=1)
    expires_at: dt.datetime
    host: str = ""
    pid: int = 0
    released: bool = False
    granted_at: dt.datetime | None = None
    took_over: bool = False
    renewed_at: dt.datetime | None = None

    @property
    def heard_at(self) -> dt.datetime | None:
        """When its holder was last heard from: the last renewal, else the claim."""
        return self.renewed_at or self.granted_at

    def is_live(self, now: dt.datetime | None = None) -> bool:
        return not self.released and self.expires_at > (now or utcnow())


Task.model_rebuild()

"""A task's plan: the steps the planner wrote (`Plan`, `PlanStep`) and each kept as a `Step`.

A step goes ``pending -> current -> completed | failed | skipped |
cancelled``; an ended one never changes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field, JsonValue

from ..errors import InvalidTransition
from .base import NonEmpty, Record

__all__ = ["Plan", "PlanStep", "Step", "StepStatus", "check_step_move"]


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

"""What a person decides on: how risky a tool is, which risks need a person, and each decision."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import Field, JsonValue

from .base import NonEmpty, Record, utcnow

__all__ = ["Approval", "ApprovalStatus", "Constraints", "HumanInTheLoop", "RiskLevel"]


class RiskLevel(StrEnum):
    READ_ONLY = "read_only"
    WRITE_LOCAL = "write_local"
    EXTERNAL_ACTION = "external_action"


class HumanInTheLoop(Record):
    required_for_risk_levels: list[RiskLevel] = Field(default_factory=lambda: [RiskLevel.EXTERNAL_ACTION])


class Constraints(Record):
    human_in_the_loop: HumanInTheLoop = Field(default_factory=HumanInTheLoop)


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

"""Spend caps beyond a task: a daily limit on what the model calls of an agent, or of the tasks
with a label, may cost, and what they spent on a day (docs/limits.md, "Spend caps")."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import Field

from .base import NonEmpty, Record, utcnow
from .task import Task

__all__ = ["CapScope", "CapSpend", "CostTotal", "SpendCap"]


class CapScope(StrEnum):
    """What a cap counts: the tasks of one agent, or the tasks with one label."""

    AGENT = "agent"
    LABEL = "label"


class SpendCap(Record):
    """A daily limit, in US dollars, on the priced model calls of an agent's tasks or a label's.

    ``name`` is the agent's name, or ``key=value`` for a label. A day is a
    UTC day. At the cap a new model call fails, or with ``approve_over``
    waits for a person's approval.
    """

    scope: CapScope
    name: NonEmpty
    daily: float = Field(gt=0, allow_inf_nan=False)
    approve_over: bool = False
    created_at: dt.datetime = Field(default_factory=utcnow)
    updated_at: dt.datetime = Field(default_factory=utcnow)

    @property
    def target(self) -> str:
        """``agent:NAME`` or ``label:KEY=VALUE``, as people name the cap."""
        return f"{self.scope}:{self.name}"

    def covers(self, task: Task) -> bool:
        """Whether `task`'s model calls count toward this cap."""
        if self.scope is CapScope.AGENT:
            return task.agent == self.name
        key, _, value = self.name.partition("=")
        return task.labels.get(key) == value


class CapSpend(Record):
    """A cap and what its tasks' priced model calls cost on one UTC day."""

    cap: SpendCap
    day: dt.date
    spent: float = Field(default=0.0, ge=0)
    # Whether the 80 % event was made this day (once per cap per day, by whichever task saw it).
    pressure_told: bool = False

    @property
    def reached(self) -> bool:
        return self.spent >= self.cap.daily


class CostTotal(Record):
    """What the model calls of one agent to one model cost on one UTC day (``ratchet costs``).

    Counted from the journal: each model call that succeeded, on the day it
    finished, under the model it asked for (else its task's) and its task's
    agent. ``cost`` is in US dollars, of the priced calls; ``unpriced_calls``
    had no known price and count 0 in it (docs/limits.md).
    """

    day: dt.date
    agent: str
    model: str
    calls: int = Field(default=0, ge=0)
    unpriced_calls: int = Field(default=0, ge=0)
    llm_tokens: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0)

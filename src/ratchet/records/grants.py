"""`TaskGrant`: an agent's leave to write a task it does not own (``grant`` over MCP).

A task belongs to the agent its ``agent`` names; a grant lets one more agent
write it (patch its state, send it notes, approve its calls, ...) without
giving it away (a handoff does that). Grants are kept per task, once per
agent, and outlive a handoff: they were given for the task.
"""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from .base import NonEmpty, Record, utcnow

__all__ = ["TaskGrant"]


class TaskGrant(Record):
    """Agent `agent` may write task `task_id`; `granted_by` is the agent that gave it (None: a person)."""

    task_id: NonEmpty
    agent: NonEmpty
    granted_by: str | None = None
    granted_at: dt.datetime = Field(default_factory=utcnow)

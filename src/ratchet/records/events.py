"""Events: the append-only account of a task's progress, for people."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import Field, JsonValue

from .base import NonEmpty, Record, utcnow

__all__ = ["Event", "Severity"]


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

"""Conversations: each message of a thread (a task's or a session's) and a session's durable state."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, JsonValue

from .base import NonEmpty, Record, utcnow

__all__ = ["Message", "Session"]


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

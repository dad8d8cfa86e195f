"""`InboxMessage`: one message sent to a task (`Runtime.send`), kept in its durable inbox.

A task's inbox keeps every message sent to it, numbered per task in the
order they arrived (``seq``, from 1). A receive takes the oldest message of
its name that no receive took yet, and records in ``taken_by`` the journal
seq of the receive that took it: a message is taken once, and never lost.
"""

from __future__ import annotations

import datetime as dt

from pydantic import Field, JsonValue

from .base import NonEmpty, Record, utcnow

__all__ = ["InboxMessage"]


class InboxMessage(Record):
    """A message in a task's inbox. ``seq`` is set by the store; ``taken_by`` once a receive took it."""

    task_id: NonEmpty
    seq: int = Field(default=0, ge=0)
    name: NonEmpty
    payload: JsonValue = None
    sent_at: dt.datetime = Field(default_factory=utcnow)
    taken_by: int | None = Field(default=None, ge=0)  # the journal seq of the receive that took it
    taken_at: dt.datetime | None = None

    @property
    def pending(self) -> bool:
        return self.taken_by is None

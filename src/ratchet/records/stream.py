"""`StreamEntry`: one entry of a task's stream, what readers follow while the task runs.

A task's stream is an append-only log, numbered per task from 0 (``offset``),
written for people and programs watching the task as it works, never read by
the task itself. It holds the pieces of text a model writes as it answers
(``text``), marks where each attempt of a streamed model call begins
(``attempt``) and how it ended (``end``), and the entries a workflow writes
itself (``value``, ``ctx.write_stream(key, value)``). The journal, not the
stream, holds what a task did: a model call's whole answer is journaled once.

An attempt that was cut off (its worker killed, its connection dropped) has
an ``attempt`` mark and no ``end``; the next attempt of the same call (same
``seq``) begins with a mark of its own that names where the cut one stopped,
so a reader never takes two attempts' pieces for one answer.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import Field, JsonValue

from .base import NonEmpty, Record, utcnow

__all__ = ["StreamEntry", "StreamKind"]


class StreamKind(StrEnum):
    """What a stream entry is."""

    TEXT = "text"  # a piece of a model call's answer, in the order written
    ATTEMPT = "attempt"  # an attempt of a streamed model call begins
    END = "end"  # that attempt ended: ``value`` says how ({"outcome": "succeeded" | "failed", ...})
    VALUE = "value"  # an entry a workflow wrote itself, under ``key``


class StreamEntry(Record):
    """One entry of a task's stream. ``offset`` is set by the store (0 for the task's first).

    ``seq`` is the journal seq of the call the entry belongs to (the model
    call of a ``text``, ``attempt`` or ``end``; the write of a ``value``) and
    ``attempt`` that call's attempt, from 1.
    """

    task_id: NonEmpty
    offset: int = Field(default=0, ge=0)
    kind: StreamKind
    seq: int | None = Field(default=None, ge=0)
    attempt: int | None = Field(default=None, ge=1)
    key: str | None = None
    value: JsonValue = None
    written_at: dt.datetime = Field(default_factory=utcnow)

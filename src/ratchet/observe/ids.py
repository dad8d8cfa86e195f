"""Span and trace ids derived from what the journal keys: the same on every resume.

A task's spans share one trace whose id is derived from the task id; a
span's id is derived from the task id and what it reports (the task, a
step's index, a call's seq and first live attempt). A worker that resumes a
task after a crash therefore adds its spans to the same trace, under the
same parents, without reading anything back.

The OpenTelemetry API lets no caller choose a span id: `stable_span_id` sets
the one the next span should take, and `ratchet.observe.setup.StableIds`
(the SDK's id generator Ratchet installs) hands it out.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["next_span_id", "next_trace_id", "span_id_for", "stable_span_id", "trace_id_for"]

_next_span_id: ContextVar[int | None] = ContextVar("ratchet_next_span_id", default=None)
_next_trace_id: ContextVar[int | None] = ContextVar("ratchet_next_trace_id", default=None)


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()


def trace_id_for(task_id: str) -> int:
    """The 128-bit trace id of a task's spans (never 0, which OpenTelemetry reads as invalid)."""
    return int.from_bytes(_digest("ratchet-trace", task_id)[:16], "big") or 1


def span_id_for(task_id: str, *parts: object) -> int:
    """The 64-bit span id of what `parts` name in the task (``"task"``; ``"step", 2``; ``"op", 7, 1``)."""
    return int.from_bytes(_digest("ratchet-span", task_id, *parts)[:8], "big") or 1


def next_span_id() -> int | None:
    """The span id `stable_span_id` set for the span being started, if any."""
    return _next_span_id.get()


def next_trace_id() -> int | None:
    """The trace id `stable_span_id` set for a root span being started, if any."""
    return _next_trace_id.get()


@contextlib.contextmanager
def stable_span_id(span_id: int, trace_id: int | None = None) -> Iterator[None]:
    """Give the span started inside the block the id `span_id` (where Ratchet's id generator runs).

    `trace_id` is for a root span, which has no parent to take its trace id from.
    """
    span_token = _next_span_id.set(span_id)
    trace_token = _next_trace_id.set(trace_id)
    try:
        yield
    finally:
        _next_span_id.reset(span_token)
        _next_trace_id.reset(trace_token)

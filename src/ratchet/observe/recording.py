"""Where the engine reports what metrics count, to whichever recorder the process installed.

A worker serving metrics installs its `ratchet.observe.metrics.Metrics`
with `recording` around its loop; the engine's reports reach it through a
context variable (asyncio tasks inherit it), and cost one lookup when no
recorder is installed. No registry is global: two workers in one process
(the tests) each count their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol

__all__ = ["Recorder", "current_recorder", "note_takeover", "recording"]


class Recorder(Protocol):
    """What the engine reports (`ratchet.observe.metrics.Metrics` implements it)."""

    def call_ended(self, kind: str, outcome: str) -> None:
        """A live call ended (``succeeded``, ``failed``, ``stopped``, ``retry_later``)."""
        ...

    def retried(self, kind: str, count: int) -> None:
        """A call failed `count` attempts that were tried again."""
        ...

    def in_doubt(self) -> None:
        """A run found a tool call in flight (started, no result) from a run that stopped."""
        ...

    def took_over(self) -> None:
        """A run picked up a task that the run before it left running."""
        ...

    def committed(self, seconds: float) -> None:
        """A journal write committed, taking `seconds`."""
        ...


_recorder: ContextVar[Recorder | None] = ContextVar("ratchet_metrics_recorder", default=None)


def current_recorder() -> Recorder | None:
    return _recorder.get()


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """Send the engine's reports made inside the block (and the tasks it starts) to `recorder`."""
    token = _recorder.set(recorder)
    try:
        yield
    finally:
        _recorder.reset(token)


def note_takeover() -> None:
    recorder = _recorder.get()
    if recorder is not None:
        recorder.took_over()

"""Where the engine reports what metrics count, to whichever recorders the process has.

A worker serving metrics installs its `ratchet.observe.metrics.Metrics`
with `recording` around its loop; the engine's reports reach it through a
context variable (asyncio tasks inherit it). When the program set an
OpenTelemetry meter provider, the same reports also go to it
(`ratchet.observe.otel_metrics`). With neither, a report costs one lookup.
No registry is global: two workers in one process (the tests) each count
their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol

from .measured import MeasuredCall
from .otel_metrics import otel_recorder

__all__ = ["MeasuredCall", "Recorder", "current_recorder", "note_takeover", "recording"]


class Recorder(Protocol):
    """What the engine reports (`ratchet.observe.metrics.Metrics` implements it)."""

    def call_ended(self, kind: str, outcome: str) -> None:
        """A live call ended (``succeeded``, ``failed``, ``stopped``, ``retry_later``)."""
        ...

    def call_measured(self, call: MeasuredCall) -> None:
        """The same call, with its time, its model or tool, its agent and its usage."""
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

    def task_ended(self, agent: str, outcome: str, seconds: float) -> None:
        """A run ended a task (`outcome`: its final status), `seconds` after the task first started."""
        ...

    def slots_changed(self, in_use: int, free: int) -> None:
        """A worker's slots in use and free changed by these amounts (a task taken: +1, -1)."""
        ...


class _Both:
    """The recorder `recording` installed and the OpenTelemetry one: each report goes to both."""

    def __init__(self, first: Recorder, second: Recorder) -> None:
        self.recorders = (first, second)

    def call_ended(self, kind: str, outcome: str) -> None:
        for recorder in self.recorders:
            recorder.call_ended(kind, outcome)

    def call_measured(self, call: MeasuredCall) -> None:
        for recorder in self.recorders:
            recorder.call_measured(call)

    def retried(self, kind: str, count: int) -> None:
        for recorder in self.recorders:
            recorder.retried(kind, count)

    def in_doubt(self) -> None:
        for recorder in self.recorders:
            recorder.in_doubt()

    def took_over(self) -> None:
        for recorder in self.recorders:
            recorder.took_over()

    def committed(self, seconds: float) -> None:
        for recorder in self.recorders:
            recorder.committed(seconds)

    def task_ended(self, agent: str, outcome: str, seconds: float) -> None:
        for recorder in self.recorders:
            recorder.task_ended(agent, outcome, seconds)

    def slots_changed(self, in_use: int, free: int) -> None:
        for recorder in self.recorders:
            recorder.slots_changed(in_use, free)


_recorder: ContextVar[Recorder | None] = ContextVar("ratchet_metrics_recorder", default=None)


def current_recorder() -> Recorder | None:
    """Where a report goes now: the installed recorder, OpenTelemetry's, both, or None."""
    installed, metered = _recorder.get(), otel_recorder()
    if metered is None:
        return installed
    return metered if installed is None else _Both(installed, metered)


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """Send the engine's reports made inside the block (and the tasks it starts) to `recorder`."""
    token = _recorder.set(recorder)
    try:
        yield
    finally:
        _recorder.reset(token)


def note_takeover() -> None:
    recorder = current_recorder()
    if recorder is not None:
        recorder.took_over()

"""A `RatchetAgent` run's spans: one trace with its task's, each call reported once, nothing replayed.

`traced_run` runs the agent in the OpenTelemetry context of the span Ratchet
reports for the task (or for the step it runs in, `parent_context`), so the
spans pydantic-ai's instrumentation starts live (``Agent.instrument_all()``,
``Agent(instrument=...)``, its ``Instrumentation`` capability, Logfire's
``instrument_pydantic_ai``) nest under it, in the task's trace.

When pydantic-ai reports the run, its ``chat`` and ``execute_tool`` spans stand
for the run's model requests and tool calls: Ratchet reports no span of its own
for them (`reported_by_library`) and puts the call's place in the journal on
pydantic-ai's span instead (`mark_span`). Uninstrumented, Ratchet's spans report
them, naming the pydantic-ai model.

A replayed call is reported to pydantic-ai as one (``record_durable_unit``)
inside a ``replay_scope``, pydantic-ai's own means for durable engines: a span
that covered only replayed work (the call's, the run's when nothing ran live)
is never ended, so never exported, and its tokens are not counted again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from pydantic_ai._run_context import get_current_run_context
from pydantic_ai.durable_exec import record_durable_unit, replay_scope
from pydantic_ai.tools import RunContext

from ...engine.context import Context
from ...observe.spans import parent_context, reported_by_library

__all__ = ["mark_span", "pydantic_ai_reports", "ran", "reported_once", "traced_run"]


@contextmanager
def traced_run(context: Context, *, replay_only: bool = False) -> Iterator[None]:
    """One run of the agent in the task of `context`, its live spans in the task's trace.

    A span that ends while the workflow replays its journal covers replayed work only; a
    run of a completed task (`replay_only`) is replayed whole, and reports nothing.
    """
    replaying: Callable[[], bool] = (lambda: True) if replay_only else (lambda: context.replaying)
    parent = parent_context(context.task_id, context.current_step)
    token = otel_context.attach(parent) if parent is not None else None
    try:
        with replay_scope(is_replaying=replaying):
            yield
    finally:
        if token is not None:
            otel_context.detach(token)


def pydantic_ai_reports(run_context: RunContext[Any] | None = None) -> bool:
    """Whether pydantic-ai's instrumentation reports the run making a call (its tracer is a real one)."""
    found = run_context if run_context is not None else get_current_run_context()
    return found is not None and not isinstance(found.tracer, trace.NoOpTracer)


@contextmanager
def reported_once(by_pydantic_ai: bool) -> Iterator[None]:
    """The journaled calls made inside, each reported by one span: pydantic-ai's when `by_pydantic_ai`."""
    if not by_pydantic_ai:
        yield
        return
    with reported_by_library():
        yield


def ran(live: bool) -> None:
    """A journaled call ended: it ran live, or its result was replayed (`live` False).

    Told in the task that made the call, before the span pydantic-ai opened for it ends.
    """
    record_durable_unit(executed=live)


def mark_span(attributes: dict[str, str | int]) -> None:
    """Put Ratchet's keys of a live call on the span pydantic-ai opened for it (the current one)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({f"ratchet.{key}": value for key, value in attributes.items()})

"""The spans Ratchet reports: one per task, per step, and per live model or tool call.

Each span is started and ended at once when what it reports is over, with
its recorded start time, so a span exists only for work that finished in
this process: a replayed call reports nothing, and a call cut short by a
crash reports nothing until the run that finishes it. Model and tool calls,
and an agent task's span (``invoke_agent``), follow the OpenTelemetry GenAI
conventions (`ratchet.observe.genai`). Ids: `ratchet.observe.ids`; every span
but a task's is started in an explicit context carrying its task's trace id,
and its derived span id is handed out by Ratchet's tracer
(`ratchet.observe.tracer`).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from pydantic import JsonValue

from ..records import Operation, OpKind, Step, Task, utcnow
from .genai import agent_attributes, is_agent_task, model_attributes, tool_attributes, tool_call_id
from .ids import span_id_for, stable_span_id, trace_id_for
from .tracer import ratchet_tracer

__all__ = [
    "ObservedCall",
    "call_span",
    "parent_context",
    "reported_by_library",
    "served_by",
    "step_span",
    "task_span",
    "tracing_on",
]

Attributes = Mapping[str, str | int | float | bool | tuple[str, ...]]


class _InTask(Protocol):
    @property
    def task(self) -> Task: ...


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class ObservedCall(Protocol):
    """What a call's span reads of it (the engine's `Call` has it): observe sits below the engine."""

    @property
    def context(self) -> _InTask: ...

    @property
    def kind(self) -> OpKind: ...

    @property
    def name(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def attempt(self) -> int: ...

    @property
    def tool(self) -> _Named | None: ...

    @property
    def model(self) -> str | None: ...

    @property
    def input(self) -> JsonValue: ...

    @property
    def request(self) -> Any: ...

    @property
    def idempotency_key(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, JsonValue]: ...


def _api() -> Any:
    """The OpenTelemetry API's trace module, if this process imported it, else None.

    A tracer provider can only have been set by code that imported the API,
    so a process that never did has tracing off, and Ratchet imports nothing.
    """
    return sys.modules.get("opentelemetry.trace")


def tracing_on() -> bool:
    """Whether spans go anywhere: the API is loaded and a tracer provider was set."""
    trace = _api()
    return trace is not None and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _nanos(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def _emit(
    task_id: str,
    name: str,
    ids: tuple[object, ...],
    parent: tuple[object, ...] | None,
    start: dt.datetime,
    end: dt.datetime,
    attributes: Attributes,
    error: str | None = None,
    client: bool = False,
    linked_task: str | None = None,
) -> None:
    if not tracing_on():
        return
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    tracer, chooses_ids = ratchet_tracer()
    if parent is None and chooses_ids:
        context = otel_context.Context()  # a root: no ambient span is its parent; its trace id is chosen
    else:
        # The task's trace id travels in the context, whatever the provider's id generator does. A
        # task's span under a provider whose ids Ratchet cannot choose (ratchet.observe.tracer) hangs
        # under its derived id, as its steps do: one trace still, not a root of its own.
        context = trace.set_span_in_context(trace.NonRecordingSpan(_span_context(task_id, *(parent or ids))))
    # A child task has a trace of its own (its ids derive from its own id, so a resume needs no
    # lookup); a link to its parent task's span lets a trace viewer go from one to the other.
    links = [trace.Link(_span_context(linked_task, "task"))] if linked_task else []
    with stable_span_id(span_id_for(task_id, *ids), trace_id_for(task_id)):
        span = tracer.start_span(
            name,
            context=context,
            kind=trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL,
            attributes=dict(attributes),
            links=links,
            start_time=_nanos(start),
        )
    if error is not None:
        span.set_status(trace.Status(trace.StatusCode.ERROR, error))
        span.set_attribute("error.type", error.split(":", 1)[0])
    span.end(end_time=_nanos(max(end, start)))


def _span_context(task_id: str, *ids: object) -> Any:
    """The context of the span `ids` name in the task, for a parent or a link."""
    from opentelemetry import trace

    return trace.SpanContext(
        trace_id=trace_id_for(task_id),
        span_id=span_id_for(task_id, *ids),
        is_remote=False,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    )


def parent_context(task_id: str, step: int | None = None) -> Any:
    """The OpenTelemetry context a span started live inside the task nests in (under `step` when given).

    For libraries that report spans as they run (pydantic-ai's instrumentation): started in
    this context, their spans join the task's trace under the span Ratchet reports for the
    task or the step. None when tracing is off.
    """
    if not tracing_on():
        return None
    from opentelemetry import trace

    return trace.set_span_in_context(trace.NonRecordingSpan(_span_context(task_id, *_task_parent(step))))


_by_library: ContextVar[bool] = ContextVar("ratchet_calls_reported_by_library", default=False)


@contextmanager
def reported_by_library() -> Iterator[None]:
    """Calls made inside the block are reported by the library that makes them: no span of Ratchet's.

    For a library whose own live span stands for each call it makes (pydantic-ai's
    instrumentation, its ``chat`` and ``execute_tool`` spans): a second span would count it twice.
    """
    token = _by_library.set(True)
    try:
        yield
    finally:
        _by_library.reset(token)


def _task_parent(step: Any) -> tuple[object, ...]:
    return ("step", step) if isinstance(step, int) else ("task",)


def call_span(
    call: ObservedCall,
    *,
    first_attempt: int,
    started: dt.datetime,
    outcome: str,
    error: str | None,
    answer: JsonValue = None,
) -> None:
    """Report one live call: every attempt this process made of it, as one span.

    Its id is derived from the seq and the first attempt made live, so a run
    that takes a call over after a crash (a new attempt) reports a span of
    its own, and a run that replays it reports none. `answer` is what the
    call returned, when it succeeded (the model's answer; the tool's result).
    """
    if not tracing_on() or _by_library.get():
        return  # off, or the library's own span stands for it (`reported_by_library`)
    task, name, seq, attempt = call.context.task, call.name, call.seq, call.attempt
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "ratchet.task.id": task.id,
        "ratchet.op.seq": seq,
        "ratchet.op.kind": str(call.kind),
        "ratchet.op.name": name,
        "ratchet.op.attempt": attempt,
        "ratchet.op.attempts": attempt - first_attempt + 1,
        "ratchet.op.outcome": outcome,
        "ratchet.op.idempotency_key": call.idempotency_key,
    }
    step = call.meta.get("step")
    if isinstance(step, int):
        attributes["ratchet.step.index"] = step
    if call.kind is OpKind.MODEL:
        url, protocol = served_by(call)
        span_name, said = model_attributes(
            task, call.model, call.request, answer, call.meta.get("usage"), url, protocol
        )
        attributes |= said
        attributes["ratchet.model.purpose"] = name.removeprefix("model:")
        client = True
    else:
        tool = call.tool.name if call.tool is not None else name
        attributes |= tool_attributes(tool, tool_call_id(seq), call.input, answer)
        span_name = f"execute_tool {tool}"
        client = False
    _emit(
        task.id,
        span_name,
        ("op", seq, first_attempt),
        _task_parent(step),
        started,
        utcnow(),
        attributes,
        error,
        client,
    )


def served_by(call: ObservedCall) -> tuple[str | None, str | None]:
    """The URL a Ratchet model call went to (its provider's ``base_url``) and the protocol it spoke
    (its ``provider``: ``openai`` for an ``[endpoints.gpu]`` of ``provider = "openai"``), each when
    the provider says."""
    model_for = getattr(call.context, "model_for", None)
    if call.request is None or model_for is None:
        return None, None  # an integration's model call: its own library reports where it went
    try:
        provider = model_for(call.model)  # built already: the call just went through it
    except Exception:  # a model that cannot be built did not take the call: no address to give
        return None, None
    base_url = getattr(provider, "base_url", None)
    protocol = getattr(provider, "provider", None)
    return (
        base_url if isinstance(base_url, str) else None,
        protocol if isinstance(protocol, str) and protocol else None,
    )


def step_span(task: Task, step: Step, ops: list[Operation]) -> None:
    """Report a step that ended, spanning its calls (from the first start to the last finish)."""
    mine = [op for op in ops if op.meta.get("step") == step.index]
    if not mine:
        return  # a step that made no call has no time of its own in the journal
    start = min(op.started_at for op in mine)
    end = max(op.finished_at or op.started_at for op in mine)
    _emit(
        task.id,
        f"step {step.index + 1}: {step.name}",
        ("step", step.index),
        ("task",),
        start,
        end,
        {
            "ratchet.task.id": task.id,
            "ratchet.step.index": step.index,
            "ratchet.step.name": step.name,
            "ratchet.step.status": str(step.status),
            "ratchet.step.attempts": step.attempts,
        },
        step.failure_message if step.failure_message else None,
    )


def task_span(task: Task) -> None:
    """Report a task that ended: the root of its trace, from its creation to its end.

    An agent's task is the agent's run: its span is ``invoke_agent AGENT``
    with the conventions' agent attributes (`ratchet.observe.genai`).
    """
    attributes: dict[str, str | int | float | bool | tuple[str, ...]] = {
        "ratchet.task.id": task.id,
        "ratchet.task.name": task.name,
        "ratchet.task.status": str(task.status),
    }
    for key, value in (("ratchet.task.agent", task.agent), ("ratchet.task.parent_id", task.parent_id)):
        if value:
            attributes[key] = value
    name = f"task {task.name}"
    if is_agent_task(task):
        attributes |= agent_attributes(task)
        name = f"invoke_agent {task.agent}"
    _emit(
        task.id,
        name,
        ("task",),
        None,
        task.created_at,
        task.updated_at,
        attributes,
        task.error if task.error else None,
        linked_task=task.parent_id,
    )

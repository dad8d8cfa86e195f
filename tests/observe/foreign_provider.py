"""``python -m tests.observe.foreign_provider KIND MODEL TASK_ID``: an agent task under a tracer provider
the program installed itself, without Ratchet's `stable_ids`; its spans written to a file.

KIND ``sdk`` is the SDK's plain ``TracerProvider()`` (what a user's own setup installs);
``wrapped`` is a provider whose tracers wrap the SDK's and keep it as ``tracer`` (as Logfire's
do); ``hidden`` is one whose tracers hide the SDK's, so Ratchet cannot hand it the ids it derives.
The file is named by ``RATCHET_TEST_SPANS_FILE``.
After the task, a library's span is started live in ``parent_context(TASK_ID, 0)``, as pydantic-ai's
instrumentation does inside a step.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ratchet import Runtime
from ratchet.observe.spans import parent_context
from ratchet.store import open_store

from ..agent.support import INSTRUCTION, make_agent
from .span_file import SPANS_VARIABLE, SpanFile


class _HiddenTracer(trace.Tracer):
    """A tracer that starts its spans with an SDK tracer it keeps to itself."""

    def __init__(self, inner: trace.Tracer) -> None:
        self._inner = inner

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._inner.start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.start_as_current_span(*args, **kwargs)


class _WrappingTracer(_HiddenTracer):
    """A tracer that starts its spans with the SDK tracer it keeps as ``tracer``."""

    def __init__(self, inner: trace.Tracer) -> None:
        super().__init__(inner)
        self.tracer = inner


class _Wrapper(trace.TracerProvider):
    def __init__(self, inner: TracerProvider, wrap: type[_HiddenTracer]) -> None:
        self._inner = inner
        self._wrap = wrap

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return self._wrap(self._inner.get_tracer(*args, **kwargs))


async def run(model: str, task_id: str) -> None:
    store = await open_store("memory://")
    try:
        task = await Runtime(store).run(make_agent(model), instruction=INSTRUCTION, task_id=task_id)
        assert task.status == "completed", task.error
    finally:
        await store.close()


def main(kind: str, model: str, task_id: str) -> None:
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(SpanFile(os.environ[SPANS_VARIABLE])))
    wrappers = {"sdk": None, "wrapped": _WrappingTracer, "hidden": _HiddenTracer}
    wrap = wrappers[kind]
    trace.set_tracer_provider(sdk if wrap is None else _Wrapper(sdk, wrap))
    asyncio.run(run(model, task_id))
    token = otel_context.attach(parent_context(task_id, 0))
    try:
        trace.get_tracer("a library").start_span("library span").end()
    finally:
        otel_context.detach(token)


if __name__ == "__main__":
    main(*sys.argv[1:4])

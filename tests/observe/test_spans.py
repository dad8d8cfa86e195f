"""Spans of an agent task run in this process, read with the SDK's in-memory exporter.

The task "dies" in a tool call (`SimulatedCrash`, a BaseException nothing
catches: the call's intent is committed, its result is not) and is resumed
by the same runtime: the resumed run replays what was done and reports
only the calls it made live.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, StatusCode

from ratchet import Context, Runtime, TaskStatus
from ratchet.engine import workflow
from ratchet.observe import span_id_for, trace_id_for
from ratchet.records import OpKind, OpStatus
from ratchet.store import StateStore

from ..agent.support import GUARD, INSTRUCTION, make_agent
from ..helpers.agent_tools import CRASH_VARIABLE, SimulatedCrash
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict

TASK_ID = "traced"
SCRIPT: dict[str, Any] = {
    "plan": [plan("look at X", "ship v2")],
    "act": [
        calls(("check_status", {"service": "X"}), ("restart_service", {"service": "X"})),
        say("X restarted"),
        calls(("deploy", {"version": "v2"})),
        say("v2 is live"),
    ],
    "verify": [verdict(True, "X answers"), verdict(True, "v2 answers")],
}


def attributes(span: ReadableSpan) -> Mapping[str, Any]:
    """A finished span's attributes: the SDK types them optional, and always gives them."""
    assert span.attributes is not None
    return span.attributes


def context_of(span: ReadableSpan) -> SpanContext:
    """A finished span's own context: the SDK types it optional, and always gives it."""
    context = span.get_span_context()
    assert context is not None
    return context


async def test_a_resumed_task_reports_each_live_call_once_in_one_trace(
    store: StateStore,
    spans: InMemorySpanExporter,
    script: Callable[[dict[str, Any]], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tools_ledger: Ledger,
) -> None:
    marker = tmp_path / "crash-once"
    marker.touch()
    monkeypatch.setenv(CRASH_VARIABLE, str(marker))
    rt = Runtime(store)
    agent = make_agent(script(SCRIPT))
    with pytest.raises(SimulatedCrash):
        await asyncio.wait_for(rt.run(agent, instruction=INSTRUCTION, task_id=TASK_ID), GUARD)
    before = {span.name for span in spans.get_finished_spans()}
    assert "execute_tool restart_service" in before and "execute_tool deploy" not in before

    task = await asyncio.wait_for(rt.resume(TASK_ID), GUARD)
    assert task.status is TaskStatus.COMPLETED, task.error

    finished = spans.get_finished_spans()
    contexts = [span.get_span_context() for span in finished]
    assert {c.trace_id for c in contexts if c is not None} == {trace_id_for(TASK_ID)}
    assert max(Counter(c.span_id for c in contexts if c is not None).values()) == 1

    ops = [op for op in await store.list_ops(TASK_ID) if op.kind in (OpKind.MODEL, OpKind.TOOL)]
    assert all(op.status is OpStatus.SUCCEEDED for op in ops)
    seqs = Counter(
        attributes(span)["ratchet.op.seq"] for span in finished if "ratchet.op.seq" in attributes(span)
    )
    assert seqs == Counter(op.seq for op in ops)  # the replayed calls are not reported again

    [deploy] = [span for span in finished if span.name == "execute_tool deploy"]
    assert attributes(deploy)["ratchet.op.attempt"] == 2  # in flight at the crash: run again
    assert (
        attributes(deploy)["ratchet.op.idempotency_key"]
        == f"{TASK_ID}:{attributes(deploy)['ratchet.op.seq']}"
    )

    [plan_call] = [span for span in finished if attributes(span).get("ratchet.model.purpose") == "plan"]
    assert attributes(plan_call)["gen_ai.operation.name"] == "chat"
    assert attributes(plan_call)["gen_ai.system"] == "scripted"
    assert attributes(plan_call)["gen_ai.usage.input_tokens"] >= 0
    assert "gen_ai.usage.output_tokens" in attributes(plan_call)

    [root] = [span for span in finished if span.parent is None]
    assert root.name == "invoke_agent ops" and context_of(root).span_id == span_id_for(TASK_ID, "task")
    assert attributes(root)["ratchet.task.status"] == "completed"
    steps = [span for span in finished if "ratchet.step.name" in attributes(span)]
    assert sorted(attributes(span)["ratchet.step.name"] for span in steps) == ["look at X", "ship v2"]
    assert all(
        span.parent is not None and span.parent.span_id == span_id_for(TASK_ID, "task") for span in steps
    )


async def test_a_failed_call_is_an_error_span(
    store: StateStore,
    spans: InMemorySpanExporter,
    script: Callable[[dict[str, Any]], str],
    tools_ledger: Ledger,
) -> None:
    rt = Runtime(store)
    failing = {
        "plan": [plan("look at X")],
        "act": [calls(("check_status", {"nothing": "X"})), say("done")],
        "verify": [verdict(True)],
    }
    await asyncio.wait_for(
        rt.run(make_agent(script(failing)), instruction=INSTRUCTION, task_id=TASK_ID), GUARD
    )
    [check] = [span for span in spans.get_finished_spans() if span.name == "execute_tool check_status"]
    assert check.status.status_code is StatusCode.ERROR
    assert attributes(check)["ratchet.op.outcome"] == "failed"


@workflow
async def leaf(ctx: Context) -> str:
    return "leaf"


@workflow
async def parent(ctx: Context) -> Any:
    return await ctx.run_child(leaf, {})


async def test_a_child_tasks_trace_links_to_its_parent_task(
    store: StateStore, spans: InMemorySpanExporter
) -> None:
    task = await asyncio.wait_for(Runtime(store).run(parent, task_id="parent"), GUARD)
    assert task.status is TaskStatus.COMPLETED, task.error
    [child] = await store.list_children("parent")
    roots = {span.name: span for span in spans.get_finished_spans() if span.parent is None}
    child_root, parent_root = roots["task leaf"], roots["task parent"]
    assert context_of(child_root).trace_id == trace_id_for(child.id)
    [link] = child_root.links
    assert link.context.trace_id == trace_id_for("parent")
    assert link.context.span_id == span_id_for("parent", "task") == context_of(parent_root).span_id
    assert not parent_root.links


def test_a_span_started_live_in_a_tasks_parent_context_joins_its_trace_under_the_task_or_step(
    spans: InMemorySpanExporter,
) -> None:
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    from ratchet.observe.spans import parent_context

    tracer = trace.get_tracer("a library")
    for step, parent in ((None, ("task",)), (2, ("step", 2))):
        token = otel_context.attach(parent_context(TASK_ID, step))
        try:
            tracer.start_span("its own").end()
        finally:
            otel_context.detach(token)
        [span] = spans.get_finished_spans()
        spans.clear()
        assert span.context is not None and span.parent is not None
        assert span.context.trace_id == trace_id_for(TASK_ID)
        assert span.parent.span_id == span_id_for(TASK_ID, *parent)

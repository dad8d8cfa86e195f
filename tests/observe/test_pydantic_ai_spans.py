"""A RatchetAgent run with pydantic-ai instrumented, as a Logfire user sees it: one trace, each call once.

pydantic-ai reports the run (``Agent.instrument_all()``) to the SDK tracer
provider of tests/observe/conftest.py, whose in-memory exporter holds every
span; its `FunctionModel` answers (tests/integrations/pydai_support.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentedModel

from ratchet import Context, Runtime, TaskStatus, workflow
from ratchet.errors import AgentRunNotCompleted
from ratchet.integrations.pydantic_ai import RatchetAgent
from ratchet.observe import span_id_for, trace_id_for
from ratchet.records import OpKind
from ratchet.store import StateStore

from ..integrations.pydai_support import Counts, calling, streaming
from .test_spans import attributes, context_of


@pytest.fixture
def instrumented() -> Iterator[None]:
    """pydantic-ai instrumented for the test, as ``logfire.instrument_pydantic_ai()`` does it."""
    Agent.instrument_all()
    try:
        yield
    finally:
        Agent.instrument_all(False)


def _mailer(counts: Counts) -> Agent[None, str]:
    agent = Agent(calling("send", {"to": "ops"}, counts), name="mailer")

    @agent.tool_plain
    def send(to: str) -> str:
        """Send a message."""
        counts.tools.append({"to": to})
        return f"sent to {to}"

    return agent


def _by_name(finished: tuple[ReadableSpan, ...]) -> Counter[str]:
    return Counter(span.name for span in finished)


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_run_and_its_replay_make_one_trace_each_call_reported_once(
    store: StateStore, spans: InMemorySpanExporter, instrumented: None
) -> None:
    counts = Counts()
    mailer = RatchetAgent(_mailer(counts), store=store)

    first = await mailer.run("tell ops", task_id="logfire-1")

    finished = spans.get_finished_spans()
    assert {context_of(span).trace_id for span in finished} == {trace_id_for("logfire-1")}  # one trace
    assert _by_name(finished) == {
        "task mailer": 1,  # Ratchet's
        "invoke_agent mailer": 1,  # pydantic-ai's, from here down
        "chat function:answer:": 2,
        "execute_tool send": 1,
    }
    [root] = [span for span in finished if span.parent is None]
    [run] = [span for span in finished if span.name == "invoke_agent mailer"]
    assert context_of(root).span_id == span_id_for("logfire-1", "task")
    assert _parent_id(run) == context_of(root).span_id
    calls = [span for span in finished if span.name.startswith(("chat ", "execute_tool "))]
    assert all(_parent_id(span) == context_of(run).span_id for span in calls)

    # Each journaled call has one span, pydantic-ai's, which names its place in the journal.
    ops = await store.list_ops("logfire-1")
    assert sorted(attributes(span)["ratchet.op.seq"] for span in calls) == [op.seq for op in ops]
    for span in calls:
        assert (
            attributes(span)["ratchet.op.idempotency_key"]
            == f"logfire-1:{attributes(span)['ratchet.op.seq']}"
        )
    chats = [span for span in calls if span.name.startswith("chat ")]
    tokens = sum(int(attributes(span)["gen_ai.usage.input_tokens"]) for span in chats)
    assert tokens == sum(op.meta["usage"]["prompt_tokens"] for op in ops if op.kind is OpKind.MODEL)

    spans.clear()
    again = await mailer.run("tell ops", task_id="logfire-1")  # the completed task: its journal replayed

    assert again.output == first.output and counts.model == 2
    assert spans.get_finished_spans() == ()  # nothing reported again: Logfire counts the tokens once


async def test_an_instrumented_model_is_reported_as_instrument_all_reports(
    store: StateStore, spans: InMemorySpanExporter
) -> None:
    counts = Counts()
    agent = _mailer(counts)
    assert isinstance(agent.model, FunctionModel)
    agent.model = InstrumentedModel(agent.model)  # as logfire.instrument_pydantic_ai(model) gives it
    mailer = RatchetAgent(agent, store=store)

    await mailer.run("tell ops", task_id="logfire-3")

    finished = spans.get_finished_spans()
    assert {context_of(span).trace_id for span in finished} == {trace_id_for("logfire-3")}
    assert _by_name(finished) == {
        "task mailer": 1,
        "invoke_agent mailer": 1,
        "chat function:answer:": 2,
        "execute_tool send": 1,
    }
    spans.clear()
    await mailer.run("tell ops", task_id="logfire-3")
    assert counts.model == 2 and spans.get_finished_spans() == ()


async def test_a_run_that_waits_for_approval_reports_each_call_once_across_both_runs(
    store: StateStore, spans: InMemorySpanExporter, instrumented: None
) -> None:
    agent = Agent(calling("send", {"to": "ops"}, Counts()), name="mailer")

    @agent.tool_plain(metadata={"ratchet": {"risk": "external_action"}})
    def send(to: str) -> str:
        """Send a message, once a person approved it."""
        return f"sent to {to}"

    mailer = RatchetAgent(agent, store=store)
    with pytest.raises(AgentRunNotCompleted):
        await mailer.run("tell ops", task_id="logfire-4")
    await Runtime(store).approve("logfire-4")
    await mailer.run("tell ops", task_id="logfire-4")  # resumed: the approved call runs

    finished = spans.get_finished_spans()
    assert {context_of(span).trace_id for span in finished} == {trace_id_for("logfire-4")}
    assert _by_name(finished) == {
        "task mailer": 1,
        "invoke_agent mailer": 2,  # the run that waited, and the run that finished it
        "chat function:answer:": 2,
        "execute_tool send": 1,  # once: when it ran, not when it waited
    }
    seqs = [attributes(span)["ratchet.op.seq"] for span in finished if "ratchet.op.seq" in attributes(span)]
    assert sorted(seqs) == [op.seq for op in await store.list_ops("logfire-4")]


COUNTS = Counts()
IN_WORKFLOW = RatchetAgent(_mailer(COUNTS), name="workflow-mailer")


@workflow
async def mail_then_ask(ctx: Context) -> dict[str, Any]:
    """The agent runs in a step, then the workflow waits for a person: the answer replays the run."""
    async with ctx.step("mail"):
        result = await IN_WORKFLOW.run("tell ops")
    return {"output": result.output, "answer": await ctx.ask_user("was it right?")}


async def test_a_resumed_workflow_reports_its_replayed_run_nowhere(
    store: StateStore, spans: InMemorySpanExporter, instrumented: None
) -> None:
    COUNTS.model, COUNTS.tools[:] = 0, []
    rt = Runtime(store)
    waiting = await rt.run(mail_then_ask)
    live = spans.get_finished_spans()
    [step] = [span for span in live if span.name == "step 1: mail"]
    [run] = [span for span in live if span.name == "invoke_agent mailer"]
    assert _parent_id(run) == context_of(step).span_id == span_id_for(waiting.id, "step", 0)
    assert {context_of(span).trace_id for span in live} == {trace_id_for(waiting.id)}
    calls = [op.seq for op in await store.list_ops(waiting.id) if op.kind in (OpKind.MODEL, OpKind.TOOL)]
    seqs = [attributes(span)["ratchet.op.seq"] for span in live if "ratchet.op.seq" in attributes(span)]
    assert sorted(seqs) == calls and len(calls) == 3  # each once, on pydantic-ai's spans

    spans.clear()
    await rt.answer(waiting.id, "yes")
    done = await rt.resume(waiting.id)

    assert done.status is TaskStatus.COMPLETED and COUNTS.model == 2
    names = _by_name(spans.get_finished_spans())
    assert not [name for name in names if name.startswith(("invoke_agent", "chat", "execute_tool"))], names


async def test_uninstrumented_ratchet_reports_the_calls_naming_the_pydantic_ai_model(
    store: StateStore, spans: InMemorySpanExporter
) -> None:
    agent = _mailer(Counts())
    model = agent.model
    assert isinstance(model, FunctionModel)

    await RatchetAgent(agent, store=store).run("tell ops", task_id="plain-1")

    finished = spans.get_finished_spans()
    assert _by_name(finished) == {"task mailer": 1, f"chat {model.model_name}": 2, "execute_tool send": 1}
    chats = [span for span in finished if span.name.startswith("chat ")]
    assert {
        (attributes(span)["gen_ai.system"], attributes(span)["gen_ai.request.model"]) for span in chats
    } == {(model.system, model.model_name)}


async def test_a_streamed_run_and_its_replay_report_the_same_way(
    store: StateStore, spans: InMemorySpanExporter, instrumented: None
) -> None:
    counts = Counts()
    streamer = RatchetAgent(Agent(streaming(counts, tool="look_up"), name="streamer"), store=store)

    @streamer.wrapped.tool_plain
    def look_up() -> str:
        """Look the trip up."""
        return "two items"

    async with streamer.run_stream("book it", task_id="logfire-2") as result:
        output = await result.get_output()

    finished = spans.get_finished_spans()
    assert {context_of(span).trace_id for span in finished} == {trace_id_for("logfire-2")}
    calls = [span for span in finished if span.name.startswith(("chat ", "execute_tool "))]
    ops = await store.list_ops("logfire-2")
    assert sorted(attributes(span)["ratchet.op.seq"] for span in calls) == [op.seq for op in ops]
    assert len(ops) == 3 and len(finished) == 5  # the task, the run, its three calls

    spans.clear()
    async with streamer.run_stream("book it", task_id="logfire-2") as again:
        assert await again.get_output() == output
    assert counts.model == 2 and spans.get_finished_spans() == ()

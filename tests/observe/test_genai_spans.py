"""The OpenTelemetry GenAI conventions on Ratchet's spans, read with the SDK's in-memory exporter.

One test per item: a model call's answer and request (from a real
OpenAI-compatible server on loopback), a tool call's id, an agent task's
``invoke_agent`` span and its conversation, and content capture, off by
default and on with the conventions' variable.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from ratchet import Context, Runtime, TaskStatus
from ratchet.engine import workflow
from ratchet.observe import span_id_for
from ratchet.observe.genai import CAPTURE_VARIABLE
from ratchet.store import StateStore

from ..agent.support import GUARD, INSTRUCTION, make_agent
from ..helpers.ledger import Ledger
from ..helpers.loopback import LoopbackServer, Reply
from ..helpers.scripts import plan, say, verdict
from ..providers.test_openai_streaming import text_stream
from .test_metrics_otel import read

QUESTION = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "Is X up?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_7", "type": "function", "function": {"name": "probe", "arguments": '{"host": "x"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_7", "content": "x answers"},
]
SCRIPT: dict[str, Any] = {
    "plan": [plan("look at X")],
    "act": [
        {"tool_calls": [{"id": "call_abc", "name": "check_status", "arguments": {"service": "X"}}]},
        say("X is degraded"),
    ],
    "verify": [verdict(True, "X answers")],
}


@pytest.fixture
def store_kind() -> str:
    return "memory"  # what a span says does not depend on the store (test_spans.py runs every kind)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    """An OpenAI-compatible server on loopback, which ``openai:`` models talk to."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with LoopbackServer() as running:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{running.url}/v1")
        yield running


@workflow
async def ask(ctx: Context) -> Any:
    ctx.streaming = False
    answer = await ctx.call_model(
        {
            "purpose": "act",
            "messages": QUESTION,
            "settings": {"temperature": 0.3, "max_output_tokens": 200, "seed": 7},
        },
        model="openai:gpt-4o-mini",
    )
    return answer.content


def attributes(span: ReadableSpan) -> Mapping[str, Any]:
    assert span.attributes is not None
    return span.attributes


def only(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    [span] = [span for span in spans.get_finished_spans() if span.name == name]
    return span


async def ask_the_server(store: StateStore, server: LoopbackServer) -> None:
    server.answer(
        Reply(
            {
                "id": "chatcmpl-42",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": "gpt-4o-mini-2024-07-18",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "yes"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31},
            }
        )
    )
    task = await asyncio.wait_for(Runtime(store).run(ask, task_id="asked"), GUARD)
    assert task.status is TaskStatus.COMPLETED, task.error


async def test_a_model_calls_span_says_what_was_asked_who_answered_and_where(
    store: StateStore, spans: InMemorySpanExporter, server: LoopbackServer
) -> None:
    await ask_the_server(store, server)
    chat = only(spans, "chat gpt-4o-mini")
    assert chat.kind is SpanKind.CLIENT
    said = attributes(chat)
    assert {key: said[key] for key in said if key.startswith(("gen_ai.", "server."))} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.conversation.id": "asked",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.request.temperature": 0.3,
        "gen_ai.request.max_tokens": 200,
        "gen_ai.request.seed": 7,
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.response.id": "chatcmpl-42",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 1,
        "server.address": "127.0.0.1",
        "server.port": server.port,
    }  # and no content: capture is off unless asked for


async def test_content_capture_puts_the_messages_on_the_model_calls_span_in_the_conventions_shape(
    store: StateStore, spans: InMemorySpanExporter, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_VARIABLE, "true")
    await ask_the_server(store, server)
    said = attributes(only(spans, "chat gpt-4o-mini"))
    assert json.loads(said["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "You answer in one word."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Is X up?"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "call_7", "name": "probe", "arguments": {"host": "x"}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_7", "response": "x answers"}]},
    ]
    assert json.loads(said["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "yes"}], "finish_reason": "stop"}
    ]


@workflow
async def ask_the_endpoint(ctx: Context) -> Any:
    answer = await ctx.call_model({"purpose": "act", "messages": QUESTION}, model="gw:gpt-4o-mini")
    return answer.content


async def test_a_named_endpoints_call_names_its_protocol_and_says_its_counts_are_estimated(
    store: StateStore,
    spans: InMemorySpanExporter,
    server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    meter_reader: InMemoryMetricReader,
) -> None:
    config = tmp_path / "ratchet.toml"
    config.write_text(f'[endpoints.gw]\nprovider = "openai"\nbase_url = "{server.url}/v1"\n')
    monkeypatch.setenv("RATCHET_CONFIG", str(config))
    server.answer(Reply(stream=text_stream("yes", usage=False)))  # a stream with no usage, as llama.cpp's

    task = await asyncio.wait_for(Runtime(store).run(ask_the_endpoint, task_id="via-gw"), GUARD)

    assert task.status is TaskStatus.COMPLETED, task.error
    said = attributes(only(spans, "chat gpt-4o-mini"))
    # The conventions' provider is the protocol spoken; the endpoint's name is Ratchet's own attribute.
    assert (said["gen_ai.provider.name"], said["gen_ai.system"]) == ("openai", "openai")
    assert said["ratchet.model.endpoint"] == "gw"
    assert said["ratchet.usage.estimated"] is True
    assert int(said["gen_ai.usage.input_tokens"]) > 0
    assert said["gen_ai.usage.output_tokens"] == 1  # "yes": 3 characters, rounded up to a token
    assert server.received[0].body["stream"] is True
    # The GenAI metrics name the same provider as the span.
    _, points = read(meter_reader)["gen_ai.client.operation.duration"]
    assert {(p.attributes["gen_ai.provider.name"], p.attributes["gen_ai.request.model"]) for p in points} == {
        ("openai", "gpt-4o-mini")
    }


async def run_the_agent(
    store: StateStore, script: Callable[[dict[str, Any]], str], task_id: str = "agent-run", **spec: Any
) -> str:
    agent = make_agent(script(SCRIPT), **spec)
    task = await asyncio.wait_for(Runtime(store).run(agent, instruction=INSTRUCTION, task_id=task_id), GUARD)
    assert task.status is TaskStatus.COMPLETED, task.error
    return task.id


async def test_an_agent_task_is_one_invoke_agent_span_over_its_steps_and_calls(
    store: StateStore,
    spans: InMemorySpanExporter,
    script: Callable[[dict[str, Any]], str],
    tools_ledger: Ledger,
) -> None:
    task_id = await run_the_agent(store, script)
    finished = spans.get_finished_spans()
    [root] = [span for span in finished if span.parent is None]
    assert root.name == "invoke_agent ops" and root.kind is SpanKind.INTERNAL
    model = attributes(root)["gen_ai.request.model"]
    assert str(model).endswith(".json")  # the scripted model's name: its script
    assert {key: value for key, value in attributes(root).items() if key.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "ops",
        "gen_ai.conversation.id": task_id,  # no session: the task is the conversation
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": model,
    }
    step = only(spans, "step 1: look at X")
    assert step.parent is not None and step.parent.span_id == span_id_for(task_id, "task")
    calls = [span for span in finished if "ratchet.op.seq" in attributes(span)]
    assert calls and all(span.parent is not None for span in calls)
    assert {span.parent.span_id for span in calls if span.parent is not None} <= {
        span_id_for(task_id, "task"),
        span_id_for(task_id, "step", 0),
    }
    plan_call = next(span for span in calls if attributes(span).get("ratchet.model.purpose") == "plan")
    assert attributes(plan_call)["gen_ai.response.id"] == "scripted-plan-0"
    assert attributes(plan_call)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes(plan_call)["gen_ai.request.model"] == model
    act_calls = [span for span in calls if attributes(span).get("ratchet.model.purpose") == "act"]
    assert [attributes(span)["gen_ai.response.finish_reasons"] for span in act_calls] == [
        ("tool_calls",),
        ("stop",),
    ]


async def test_a_tool_calls_span_names_the_models_tool_call_and_captures_content_only_when_asked(
    store: StateStore,
    spans: InMemorySpanExporter,
    script: Callable[[dict[str, Any]], str],
    tools_ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await run_the_agent(store, script)
    said = attributes(only(spans, "execute_tool check_status"))
    assert said["gen_ai.operation.name"] == "execute_tool"
    assert said["gen_ai.tool.name"] == "check_status" and said["gen_ai.tool.type"] == "function"
    assert said["gen_ai.tool.call.id"] == "call_abc"
    assert not [key for key in said if key.endswith((".arguments", ".result", ".messages"))]
    model_spans = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert model_spans and not any("gen_ai.input.messages" in attributes(s) for s in model_spans)

    spans.clear()
    monkeypatch.setenv(CAPTURE_VARIABLE, "True")  # the conventions' "true", in any case
    await run_the_agent(store, script, task_id="captured")
    said = attributes(only(spans, "execute_tool check_status"))
    assert json.loads(said["gen_ai.tool.call.arguments"]) == {"service": "X"}
    assert json.loads(said["gen_ai.tool.call.result"]) == {"service": "X", "status": "degraded"}
    act = [s for s in spans.get_finished_spans() if attributes(s).get("ratchet.model.purpose") == "act"]
    [asked_for_the_tool] = [
        s for s in act if attributes(s)["gen_ai.response.finish_reasons"] == ("tool_calls",)
    ]
    assert json.loads(attributes(asked_for_the_tool)["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_abc", "name": "check_status", "arguments": {"service": "X"}}
            ],
            "finish_reason": "tool_calls",
        }
    ]


async def test_a_session_is_the_conversation_of_its_tasks(
    store: StateStore,
    spans: InMemorySpanExporter,
    script: Callable[[dict[str, Any]], str],
    tools_ledger: Ledger,
) -> None:
    await run_the_agent(store, script, session="architect")
    finished = spans.get_finished_spans()
    [root] = [span for span in finished if span.parent is None]
    assert attributes(root)["gen_ai.conversation.id"] == "architect"
    model_spans = [span for span in finished if span.name.startswith("chat ")]
    assert model_spans and {attributes(s)["gen_ai.conversation.id"] for s in model_spans} == {"architect"}


async def test_an_integrations_model_call_is_named_by_its_answer_never_unknown(
    store: StateStore, spans: InMemorySpanExporter
) -> None:
    from pydantic_ai import Agent

    from ratchet.integrations.pydantic_ai import RatchetAgent

    from ..integrations.pydai_support import Counts, calling

    agent = Agent(calling("send", {"to": "ops"}, Counts()), name="mailer")

    @agent.tool_plain
    def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    result = await RatchetAgent(agent, store=store).run("tell ops", task_id="mail-1")
    assert result.output == "the tool said: sent to ops"
    model_spans = [s for s in spans.get_finished_spans() if attributes(s).get("ratchet.op.kind") == "model"]
    assert len(model_spans) == 2
    for span in model_spans:  # the task names no model: pydantic-ai's answer does
        named = attributes(span)["gen_ai.request.model"]
        assert named and named != "unknown" and span.name == f"chat {named}"
        assert attributes(span)["gen_ai.response.model"] == named

"""AnthropicModel.complete_streaming against a real Messages API server on loopback, streaming events."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from ratchet.providers import (
    MalformedAnswer,
    ModelError,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    Purpose,
    StreamingProvider,
    ToolCall,
    Usage,
)
from ratchet.providers._structured import EndpointFormats
from ratchet.providers.anthropic import AnthropicModel

from ..helpers.loopback import LoopbackServer, Reply, sse
from .test_anthropic import ACT, CHECK_STATUS, error_body, message, text

PLAN = {"goal": "restart X", "steps": []}


def event(kind: str, **fields: Any) -> str:
    """One Messages API event, named as the API names it."""
    return sse({"type": kind, **fields}, event=kind)


def start() -> str:
    started = message(input_tokens=20)
    started.update(content=[], stop_reason=None, usage={"input_tokens": 20, "output_tokens": 1})
    return event("message_start", message=started)


def text_block(index: int, *pieces: str) -> list[str]:
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(event("content_block_delta", index=index, delta={"type": "text_delta", "text": p}) for p in pieces),
        event("content_block_stop", index=index),
    ]


def tool_block(index: int, call_id: str, name: str, *pieces: str) -> list[str]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    deltas = (
        event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
        for p in pieces
    )
    return [
        event("content_block_start", index=index, content_block=block),
        *deltas,
        event("content_block_stop", index=index),
    ]


def finish(stop_reason: str = "end_turn") -> list[str]:
    return [
        event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": 9},
        ),
        event("message_stop"),
    ]


def model_at(server: LoopbackServer) -> AnthropicModel:
    return AnthropicModel(
        "claude-test", api_key="sk-ant-test", base_url=server.url, formats=EndpointFormats()
    )


class Pieces:
    """An `on_text` sink that keeps what it is handed, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, piece: str) -> None:
        self.seen.append(piece)


async def streamed(model: AnthropicModel, request: ModelRequest = ACT) -> tuple[ModelResponse, list[str]]:
    pieces = Pieces()
    response = await model.complete_streaming(request, ordinal=0, on_text=pieces)
    return response, pieces.seen


async def stream_failure(model: AnthropicModel) -> tuple[ModelError, list[str]]:
    pieces = Pieces()
    with pytest.raises(ModelError) as raised:
        await model.complete_streaming(ACT, ordinal=0, on_text=pieces)
    return raised.value, pieces.seen


async def test_text_deltas_arrive_in_order_and_the_answer_is_what_complete_returns(
    server: LoopbackServer,
) -> None:
    events = (start(), event("ping"), *text_block(0, "X ", "is ", "healthy."), *finish())
    server.answer(Reply(stream=events, stream_delay=0.01), Reply(message(text("X is healthy."))))
    model = model_at(server)
    assert isinstance(model, StreamingProvider)

    response, pieces = await streamed(model)

    assert pieces == ["X ", "is ", "healthy."]
    assert response == await model.complete(ACT, ordinal=0)
    assert (response.content, response.usage) == (
        "X is healthy.",
        Usage(prompt_tokens=20, completion_tokens=9),
    )
    assert (response.provider, response.model) == ("anthropic", "claude-test")
    assert response.finish_reason == "end_turn" and response.response_id
    assert server.received[0].body["stream"] is True
    assert "stream" not in server.received[1].body


async def test_tool_use_input_json_deltas_are_assembled_and_not_streamed(server: LoopbackServer) -> None:
    events = (
        start(),
        *text_block(0, "Checking."),
        *tool_block(1, "toolu_1", "check_status", '{"serv', 'ice": ', '"X"}'),
        *finish("tool_use"),
    )
    whole = message(
        text("Checking."),
        {"type": "tool_use", "id": "toolu_1", "name": "check_status", "input": {"service": "X"}},
        stop_reason="tool_use",
    )
    server.answer(Reply(stream=events), Reply(whole))
    model = model_at(server)
    request = ModelRequest(purpose=Purpose.ACT, messages=ACT.messages, tools=[CHECK_STATUS])

    response, pieces = await streamed(model, request)

    assert pieces == ["Checking."]
    assert response.tool_calls == [ToolCall(id="toolu_1", name="check_status", arguments={"service": "X"})]
    assert response == await model.complete(request, ordinal=0)


async def test_structured_output_through_the_forced_tool_streams_no_text(server: LoopbackServer) -> None:
    encoded = json.dumps(PLAN)
    events = (start(), *tool_block(0, "toolu_1", "plan", encoded[:9], encoded[9:]), *finish("tool_use"))
    whole = message(
        {"type": "tool_use", "id": "toolu_1", "name": "plan", "input": PLAN}, stop_reason="tool_use"
    )
    server.answer(Reply(stream=events), Reply(whole))
    model = model_at(server)
    request = ModelRequest(
        purpose=Purpose.PLAN,
        messages=ACT.messages,
        output_schema=OutputSchema(name="plan", json_schema={"type": "object"}),
    )

    response, pieces = await streamed(model, request)

    assert (response.content, pieces) == (PLAN, [])
    assert server.received[0].body["tool_choice"] == {"type": "tool", "name": "plan"}
    assert response == await model.complete(request, ordinal=0)


async def test_json_asked_in_the_prompt_streams_no_text_and_is_parsed(server: LoopbackServer) -> None:
    encoded = json.dumps(PLAN)
    server.answer(Reply(stream=(start(), *text_block(0, encoded[:5], encoded[5:]), *finish())))
    request = ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True)
    response, pieces = await streamed(model_at(server), request)
    assert (response.content, pieces) == (PLAN, [])


async def test_a_rate_limit_before_the_stream_is_retryable_after_the_wait_asked_for(
    server: LoopbackServer,
) -> None:
    server.answer(
        Reply(
            error_body("rate_limit_error", "Number of requests exceeded"),
            status=429,
            headers={"retry-after": "7"},
        )
    )
    error, pieces = await stream_failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after, pieces) == (429, True, 7.0, [])


async def test_a_stream_cut_midway_is_retryable_after_the_pieces_it_sent(server: LoopbackServer) -> None:
    events = (start(), *text_block(0, "X ", "is ", "healthy."), *finish())
    server.answer(Reply(stream=events, cut_after=4))
    error, pieces = await stream_failure(model_at(server))
    assert pieces == ["X ", "is "]
    assert (error.status, error.retryable) == (None, True)
    assert "anthropic:claude-test: the answer streamed from" in error.message
    assert "was cut off midway" in error.message


async def test_an_error_event_midway_is_a_retryable_cut(server: LoopbackServer) -> None:
    events = (
        start(),
        *text_block(0, "X "),
        event("error", error={"type": "overloaded_error", "message": "Overloaded"}),
    )
    server.answer(Reply(stream=events))
    error, pieces = await stream_failure(model_at(server))
    assert (pieces, error.status, error.retryable) == (["X "], None, True)
    assert error.message.endswith("cut off midway: Overloaded")


async def test_a_stream_that_ends_without_its_stop_was_cut(server: LoopbackServer) -> None:
    server.answer(Reply(stream=(start(), *text_block(0, "X is"))))
    error, pieces = await stream_failure(model_at(server))
    assert (pieces, error.status, error.retryable) == (["X is"], None, True)
    assert "it ended after 4 characters of text" in error.message


async def test_a_sink_that_fails_fails_the_call_with_its_own_error(server: LoopbackServer) -> None:
    server.answer(Reply(stream=(start(), *text_block(0, "X ", "is"), *finish())))

    async def broken(piece: str) -> None:
        raise RuntimeError("the stream's store is down")

    with pytest.raises(RuntimeError, match="store is down"):
        await model_at(server).complete_streaming(ACT, ordinal=0, on_text=broken)


async def test_each_piece_is_handed_on_before_the_stream_ends(server: LoopbackServer) -> None:
    gate = threading.Event()
    # The server holds the rest of the stream until the first piece has reached the sink.
    server.answer(
        Reply(stream=(start(), *text_block(0, "X ", "is ", "healthy."), *finish()), gate=gate, gate_after=3)
    )

    async def opens(piece: str) -> None:
        gate.set()

    response = await model_at(server).complete_streaming(ACT, ordinal=0, on_text=opens)

    assert server.gate_waits == [True]
    assert response.content == "X is healthy."


async def test_a_tool_input_that_is_not_json_is_malformed_not_a_cut(server: LoopbackServer) -> None:
    events = (start(), *tool_block(0, "toolu_1", "check_status", '{"service": ', "]]"), *finish("tool_use"))
    server.answer(Reply(stream=events))
    request = ModelRequest(purpose=Purpose.ACT, messages=ACT.messages, tools=[CHECK_STATUS])
    with pytest.raises(MalformedAnswer) as raised:
        await model_at(server).complete_streaming(request, ordinal=0, on_text=Pieces())
    assert raised.value.retryable is False
    assert "anthropic:claude-test returned malformed JSON for a tool's input" in raised.value.message

"""OpenAIModel.complete_streaming against a real chat-completions server on loopback that streams SSE."""

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
from ratchet.providers.openai_compat import OpenAIModel

from ..helpers.loopback import LoopbackServer, Reply, sse
from .test_openai_compat import ACT, CHECK_STATUS, PLAN, completion, error_body, function_call

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None, **extra: Any) -> str:
    """One ``chat.completion.chunk`` event as OpenAI's API writes it."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": choices,
            **extra,
        }
    )


def text_stream(*pieces: str, finish_reason: str = "stop", usage: bool = True) -> tuple[str, ...]:
    """A streamed text answer: a role delta, one delta a piece, the finish, the usage, ``[DONE]``."""
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in pieces]
    events.append(chunk({}, finish_reason))
    if usage:
        events.append(chunk(None, usage=USAGE))
    return (*events, sse("[DONE]"))


def call_delta(
    arguments: str, index: int | None = 0, call_id: str | None = None, name: str | None = None
) -> str:
    """A chunk with one piece of a tool call: its id and name in the first piece, as OpenAI sends them."""
    piece: dict[str, Any] = {"function": {"arguments": arguments}}
    if index is not None:
        piece["index"] = index
    if call_id is not None:
        piece.update(id=call_id, type="function")
    if name is not None:
        piece["function"]["name"] = name
    return chunk({"tool_calls": [piece]})


def model_at(server: LoopbackServer, **options: Any) -> OpenAIModel:
    # Each test its own record of refusals: what one server refused is no other test's business.
    options.setdefault("formats", EndpointFormats())
    return OpenAIModel("test-model", base_url=f"{server.url}/v1", api_key="sk-test", **options)


class Pieces:
    """An `on_text` sink that keeps what it is handed, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, piece: str) -> None:
        self.seen.append(piece)


async def streamed(model: OpenAIModel, request: ModelRequest = ACT) -> tuple[ModelResponse, list[str]]:
    pieces = Pieces()
    response = await model.complete_streaming(request, ordinal=0, on_text=pieces)
    return response, pieces.seen


async def stream_failure(model: OpenAIModel, request: ModelRequest = ACT) -> tuple[ModelError, list[str]]:
    pieces = Pieces()
    with pytest.raises(ModelError) as raised:
        await model.complete_streaming(request, ordinal=0, on_text=pieces)
    return raised.value, pieces.seen


async def test_text_arrives_in_order_and_the_answer_is_what_complete_returns(server: LoopbackServer) -> None:
    server.answer(
        Reply(stream=text_stream("X ", "is ", "healthy."), stream_delay=0.01),
        Reply(completion("X is healthy.")),
    )
    model = model_at(server)
    assert isinstance(model, StreamingProvider)

    response, pieces = await streamed(model)

    assert pieces == ["X ", "is ", "healthy."]
    assert response == await model.complete(ACT, ordinal=0)
    assert (response.content, response.usage) == (
        "X is healthy.",
        Usage(prompt_tokens=11, completion_tokens=7),
    )
    assert (response.provider, response.model) == ("openai", "test-model")
    assert (response.response_id, response.finish_reason) == ("chatcmpl-1", "stop")
    sent = server.received[0].body
    assert (sent["stream"], sent["stream_options"]) == (True, {"include_usage": True})
    assert "stream" not in server.received[1].body


async def test_tool_calls_split_across_deltas_are_assembled(server: LoopbackServer) -> None:
    events = (
        chunk({"role": "assistant", "content": "Checking "}),
        chunk({"content": "both."}),
        call_delta("", 0, "call_a", "check_status"),
        call_delta('{"serv', 0),
        call_delta('ice": "X"}', 0),
        call_delta('{"service"', 1, "call_b", "check_status"),
        call_delta(': "Y"}', 1),
        chunk({}, "tool_calls"),
        chunk(None, usage=USAGE),
        sse("[DONE]"),
    )
    whole = completion(
        "Checking both.",
        [
            function_call("call_a", "check_status", '{"service": "X"}'),
            function_call("call_b", "check_status", '{"service": "Y"}'),
        ],
        finish_reason="tool_calls",
    )
    server.answer(Reply(stream=events), Reply(whole))
    model = model_at(server)
    request = ModelRequest(purpose=Purpose.ACT, messages=ACT.messages, tools=[CHECK_STATUS])

    response, pieces = await streamed(model, request)

    assert pieces == ["Checking ", "both."]  # the arguments are assembled, never handed on
    assert response.tool_calls == [
        ToolCall(id="call_a", name="check_status", arguments={"service": "X"}),
        ToolCall(id="call_b", name="check_status", arguments={"service": "Y"}),
    ]
    assert response == await model.complete(request, ordinal=0)


async def test_servers_that_repeat_ids_or_send_no_index_are_assembled_alike(server: LoopbackServer) -> None:
    repeating = (
        call_delta('{"service":', 0, "call_a", "check_status"),
        call_delta(' "X"}', 0, "call_a", "check_status"),
        chunk({}, "tool_calls"),
    )
    no_index = (
        call_delta('{"service": "X"}', None, "call_a", "check_status"),
        call_delta('{"service": "Y"}', None, "call_b", "check_status"),
        chunk({}, "tool_calls"),
    )
    server.answer(Reply(stream=repeating), Reply(stream=no_index))
    model = model_at(server)

    repeated, _ = await streamed(model)
    unindexed, _ = await streamed(model)

    assert repeated.tool_calls == [ToolCall(id="call_a", name="check_status", arguments={"service": "X"})]
    assert [(call.id, call.arguments) for call in unindexed.tool_calls] == [
        ("call_a", {"service": "X"}),
        ("call_b", {"service": "Y"}),
    ]
    # No usage chunk: estimated from the characters, as unstreamed; never a confident zero.
    assert repeated.usage.estimated
    assert repeated.usage.prompt_tokens > 0
    assert repeated.usage.completion_tokens == -(-len('check_status{"service": "X"}') // 4)


async def test_a_json_answer_streams_no_text_and_is_parsed_as_complete_parses_it(
    server: LoopbackServer,
) -> None:
    text = json.dumps(PLAN)
    server.answer(
        Reply(stream=text_stream(text[:20], text[20:])),
        Reply(completion(text)),
        Reply(stream=text_stream('{"goal": "restart', finish_reason="length")),
        Reply(completion('{"goal": "restart', finish_reason="length")),
    )
    model = model_at(server)
    request = ModelRequest(
        purpose=Purpose.PLAN,
        messages=ACT.messages,
        output_schema=OutputSchema(name="plan", json_schema={"type": "object"}),
    )

    response, pieces = await streamed(model, request)

    assert (response.content, pieces) == (PLAN, [])
    assert response == await model.complete(request, ordinal=0)
    assert server.received[0].body["response_format"]["type"] == "json_schema"  # as complete asks
    with pytest.raises(MalformedAnswer) as cut:
        await model.complete_streaming(request, ordinal=0, on_text=Pieces())
    with pytest.raises(MalformedAnswer) as whole:
        await model.complete(request, ordinal=0)
    assert cut.value.message == whole.value.message
    assert "cut off at the token limit" in cut.value.message


async def test_a_server_that_refuses_stream_options_is_asked_again_without_them(
    server: LoopbackServer,
) -> None:
    refusal = error_body("Unrecognized request argument supplied: stream_options")
    server.answer(
        Reply(refusal, status=400),
        Reply(stream=text_stream("X is ", "healthy.", usage=False)),
        Reply(stream=text_stream("again", usage=False)),
    )
    model = model_at(server)

    response, pieces = await streamed(model)
    again, _ = await streamed(model)

    assert (response.content, pieces) == ("X is healthy.", ["X is ", "healthy."])
    assert (response.usage.estimated, response.usage.completion_tokens) == (True, 4)  # 13 characters
    assert "stream_options" in server.received[0].body
    assert "stream_options" not in server.received[1].body
    assert "stream_options" not in server.received[2].body  # remembered for the endpoint
    assert again.content == "again"


async def test_a_rate_limit_before_the_stream_is_retryable_after_the_wait_asked_for(
    server: LoopbackServer,
) -> None:
    server.answer(Reply(error_body("Rate limit reached"), status=429, headers={"Retry-After": "3"}))
    error, pieces = await stream_failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after, pieces) == (429, True, 3.0, [])
    assert error.message.startswith("openai:test-model: HTTP 429: Rate limit reached")


async def test_a_fatal_status_before_the_stream_is_not_retryable(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("Incorrect API key"), status=401))
    error, _ = await stream_failure(model_at(server))
    assert (error.status, error.retryable) == (401, False)


async def test_a_stream_cut_midway_is_retryable_after_the_pieces_it_sent(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("X ", "is ", "healthy."), cut_after=3))
    error, pieces = await stream_failure(model_at(server))
    assert pieces == ["X ", "is "]
    assert (error.status, error.retryable) == (None, True)
    assert "openai:test-model: the answer streamed from" in error.message
    assert "was cut off midway" in error.message


async def test_a_stream_that_ends_without_a_finish_reason_was_cut(server: LoopbackServer) -> None:
    server.answer(Reply(stream=(chunk({"content": "X is"}),)))
    error, pieces = await stream_failure(model_at(server))
    assert (pieces, error.status, error.retryable) == (["X is"], None, True)
    assert "cut off midway: it ended after 4 characters of text" in error.message


async def test_an_error_in_place_of_the_next_chunk_is_a_cut(server: LoopbackServer) -> None:
    server.answer(Reply(stream=(chunk({"content": "X"}), sse({"error": {"message": "worker overloaded"}}))))
    error, pieces = await stream_failure(model_at(server))
    assert (pieces, error.status, error.retryable) == (["X"], None, True)
    assert error.message.endswith("cut off midway: worker overloaded")


async def test_a_stream_that_stalls_past_the_timeout_is_a_cut(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("warm")), Reply(stream=text_stream("X ", "is"), stream_delay=2.0))
    model = model_at(server, timeout=0.5)
    await streamed(model)  # the SDK's first request imports what it needs: not this test's wait
    error, _ = await stream_failure(model)
    assert (error.status, error.retryable) == (None, True)
    assert "no chunk within 0.5 s" in error.message


async def test_ollama_streams_as_the_same_class(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("hi ", "there")))
    model = OpenAIModel.ollama("llama3.1", base_url=f"{server.url}/v1")
    response, pieces = await streamed(model)
    assert (pieces, response.content, response.provider) == (["hi ", "there"], "hi there", "ollama")


async def test_a_refusal_streamed_is_refused_as_complete_refuses_it(server: LoopbackServer) -> None:
    events = (
        chunk({"role": "assistant", "refusal": "I can't "}),
        chunk({"refusal": "help."}),
        chunk({}, "stop"),
    )
    whole = completion(None)
    whole["choices"][0]["message"]["refusal"] = "I can't help."
    server.answer(Reply(stream=events), Reply(whole))
    model = model_at(server)
    request = ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True)

    with pytest.raises(MalformedAnswer) as streamed_refusal:
        await model.complete_streaming(request, ordinal=0, on_text=Pieces())
    with pytest.raises(MalformedAnswer) as whole_refusal:
        await model.complete(request, ordinal=0)

    assert streamed_refusal.value.message == whole_refusal.value.message
    assert "refused to answer: I can't help." in streamed_refusal.value.message


async def test_a_sink_that_fails_fails_the_call_with_its_own_error(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("X ", "is")))

    async def broken(piece: str) -> None:
        raise RuntimeError("the stream's store is down")

    # Not a ModelError: the reader's side failed, not the model's, and no retry of the model cures it.
    with pytest.raises(RuntimeError, match="store is down"):
        await model_at(server).complete_streaming(ACT, ordinal=0, on_text=broken)


async def test_each_piece_is_handed_on_before_the_stream_ends(server: LoopbackServer) -> None:
    gate = threading.Event()
    # The server holds the rest of the stream until the first piece has reached the sink.
    server.answer(Reply(stream=text_stream("X ", "is ", "healthy."), gate=gate, gate_after=2))

    async def opens(piece: str) -> None:
        gate.set()

    response = await model_at(server).complete_streaming(ACT, ordinal=0, on_text=opens)

    assert server.gate_waits == [True]
    assert response.content == "X is healthy."

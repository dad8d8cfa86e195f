"""LiteLLMModel.complete_streaming through LiteLLM's own client, against a loopback server that streams SSE.

``litellm:openai/test-model`` with the server as its base URL, as in
test_litellm.py: LiteLLM does the HTTP and reads the stream for real.
"""

from __future__ import annotations

import importlib.util
import json
import threading

import pytest

from ratchet.providers import (
    ModelError,
    ModelRequest,
    ModelResponse,
    Purpose,
    StreamingProvider,
    ToolCall,
    Usage,
)
from ratchet.providers.litellm import LiteLLMModel

from ..helpers.loopback import LoopbackServer, Reply, sse
from .test_openai_compat import ACT, CHECK_STATUS, PLAN, completion, error_body, function_call
from .test_openai_streaming import Pieces, call_delta, chunk, text_stream

if importlib.util.find_spec("litellm") is None:
    pytest.fail("the LiteLLM tests need the [litellm] extra: pip install -e '.[test]'", pytrace=False)


def model_at(server: LoopbackServer) -> LiteLLMModel:
    return LiteLLMModel("openai/test-model", base_url=f"{server.url}/v1", api_key="sk-test")


async def streamed(model: LiteLLMModel, request: ModelRequest = ACT) -> tuple[ModelResponse, list[str]]:
    pieces = Pieces()
    response = await model.complete_streaming(request, ordinal=0, on_text=pieces)
    return response, pieces.seen


async def stream_failure(model: LiteLLMModel) -> tuple[ModelError, list[str]]:
    pieces = Pieces()
    with pytest.raises(ModelError) as raised:
        await model.complete_streaming(ACT, ordinal=0, on_text=pieces)
    return raised.value, pieces.seen


async def test_text_arrives_in_order_and_the_answer_is_what_complete_returns(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("X ", "is ", "healthy.")), Reply(completion("X is healthy.")))
    model = model_at(server)
    assert isinstance(model, StreamingProvider)

    response, pieces = await streamed(model)

    assert pieces == ["X ", "is ", "healthy."]
    assert response == await model.complete(ACT, ordinal=0)
    assert (response.content, response.usage) == (
        "X is healthy.",
        Usage(prompt_tokens=11, completion_tokens=7),
    )
    assert (response.provider, response.model) == ("litellm", "openai/test-model")
    sent = server.received[0].body
    assert (sent["stream"], sent["stream_options"]) == (True, {"include_usage": True})


async def test_tool_calls_split_across_deltas_are_assembled(server: LoopbackServer) -> None:
    events = (
        call_delta("", 0, "call_a", "check_status"),
        call_delta('{"serv', 0),
        call_delta('ice": "X"}', 0),
        chunk({}, "tool_calls"),
        chunk(None, usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}),
        sse("[DONE]"),
    )
    whole = completion(
        None, [function_call("call_a", "check_status", '{"service": "X"}')], finish_reason="tool_calls"
    )
    server.answer(Reply(stream=events), Reply(whole))
    model = model_at(server)
    request = ModelRequest(purpose=Purpose.ACT, messages=ACT.messages, tools=[CHECK_STATUS])

    response, pieces = await streamed(model, request)

    assert pieces == []
    assert response.tool_calls == [ToolCall(id="call_a", name="check_status", arguments={"service": "X"})]
    assert response == await model.complete(request, ordinal=0)


async def test_a_json_answer_streams_no_text(server: LoopbackServer) -> None:
    text = json.dumps(PLAN)
    server.answer(Reply(stream=text_stream(text[:15], text[15:])))
    request = ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True)
    response, pieces = await streamed(model_at(server), request)
    assert (response.content, pieces) == (PLAN, [])


async def test_a_rate_limit_before_the_stream_is_retryable_after_the_wait_asked_for(
    server: LoopbackServer,
) -> None:
    server.answer(Reply(error_body("Rate limit reached"), status=429, headers={"Retry-After": "3"}))
    error, pieces = await stream_failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after, pieces) == (429, True, 3.0, [])


async def test_a_stream_cut_midway_is_retryable_after_the_pieces_it_sent(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("X ", "is ", "healthy."), cut_after=3))
    error, pieces = await stream_failure(model_at(server))
    assert pieces == ["X ", "is "]
    assert (error.status, error.retryable) == (None, True)
    assert "litellm:openai/test-model: the answer streamed from" in error.message
    assert "was cut off midway" in error.message


async def test_an_error_in_place_of_the_next_chunk_is_a_cut(server: LoopbackServer) -> None:
    server.answer(Reply(stream=(chunk({"content": "X"}), sse({"error": {"message": "worker overloaded"}}))))
    error, pieces = await stream_failure(model_at(server))
    assert (pieces, error.status, error.retryable) == (["X"], None, True)
    assert "worker overloaded" in error.message


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
    await streamed(model)

    assert (response.content, pieces) == ("X is healthy.", ["X is ", "healthy."])
    assert [("stream_options" in request.body) for request in server.received] == [True, False, False]
    # No usage in the stream: LiteLLM counts the tokens itself (its tokenizer), never a confident zero.
    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0


async def test_a_sink_that_fails_fails_the_call_with_its_own_error(server: LoopbackServer) -> None:
    server.answer(Reply(stream=text_stream("X ", "is")))

    async def broken(piece: str) -> None:
        raise RuntimeError("the stream's store is down")

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

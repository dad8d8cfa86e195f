"""OpenAIModel against a real chat-completions server on loopback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import JsonValue

from ratchet.errors import InputError
from ratchet.providers import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelSettings,
    Purpose,
    ToolCall,
    Usage,
    resolve_model,
)
from ratchet.providers._http import retry_after_seconds
from ratchet.providers._wire import JSON_INSTRUCTION
from ratchet.providers.openai_compat import OLLAMA_BASE_URL, PLACEHOLDER_API_KEY, OpenAIModel

from ..helpers.loopback import LoopbackServer, Reply, closed_port

SYSTEM: dict[str, JsonValue] = {"role": "system", "content": "You operate services."}
ACT = ModelRequest(purpose=Purpose.ACT, messages=[SYSTEM, {"role": "user", "content": "Is X healthy?"}])
CHECK_STATUS: dict[str, JsonValue] = {
    "name": "check_status",
    "description": "The status of a service.",
    "parameters": {
        "type": "object",
        "properties": {"service": {"type": "string"}},
        "required": ["service"],
    },
}
PLAN = {
    "goal": "restart X",
    "steps": [
        {
            "step_name": "check",
            "description": "check X",
            "action_instruction": "call check_status",
            "validation_instruction": "X answered",
        }
    ],
}


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str = "stop",
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A chat-completions answer as OpenAI's API writes it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage
        if usage is not None
        else {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error_body(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def model_at(server: LoopbackServer, **options: Any) -> OpenAIModel:
    return OpenAIModel("test-model", base_url=f"{server.url}/v1", api_key="sk-test", **options)


async def failure(model: OpenAIModel, request: ModelRequest = ACT) -> ModelError:
    with pytest.raises(ModelError) as raised:
        await model.complete(request, ordinal=0)
    return raised.value


# --------------------------------------------------------------------------- answers


async def test_a_plain_answer_with_its_usage(server: LoopbackServer) -> None:
    server.answer(Reply(completion("X is healthy.")))
    model = model_at(server)
    assert isinstance(model, ModelProvider)

    response = await model.complete(ACT, ordinal=3)

    assert response.content == "X is healthy."
    assert response.tool_calls == []
    assert response.usage == Usage(prompt_tokens=11, completion_tokens=7)
    assert response.ordinal == 3
    assert (response.provider, response.model) == ("openai", "test-model")  # who answered, for pricing
    assert (response.response_id, response.finish_reason) == ("chatcmpl-1", "stop")  # for its span
    sent = server.last
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "test-model"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You operate services."},
        {"role": "user", "content": "Is X healthy?"},
    ]
    assert "tools" not in sent.body
    assert "response_format" not in sent.body


async def test_tool_calls_and_the_history_that_carries_them(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            completion(
                None,
                [
                    function_call("call_a", "check_status", '{"service": "X"}'),
                    function_call("call_b", "check_status", '{"service": "Y"}'),
                ],
                finish_reason="tool_calls",
            )
        )
    )
    request = ModelRequest(
        purpose=Purpose.ACT,
        messages=[
            SYSTEM,
            {"role": "user", "content": "Are X and Y healthy?"},
            # An earlier turn, as the loop keeps it: a dumped ToolCall, a result object.
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_0", "name": "check_status", "arguments": {"service": "Z"}}],
            },
            {
                "role": "tool",
                "tool_call_id": "call_0",
                "name": "check_status",
                "content": {"up": True},
            },
        ],
        tools=[CHECK_STATUS],
    )

    response = await model_at(server).complete(request, ordinal=0)

    assert response.content is None
    assert response.tool_calls == [
        ToolCall(id="call_a", name="check_status", arguments={"service": "X"}),
        ToolCall(id="call_b", name="check_status", arguments={"service": "Y"}),
    ]
    sent = server.last.body
    assert sent["tools"] == [{"type": "function", "function": CHECK_STATUS}]
    assert sent["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [function_call("call_0", "check_status", '{"service": "Z"}')],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": '{"up": true}'},
    ]


async def test_history_in_openai_wire_shape_is_sent_unchanged(server: LoopbackServer) -> None:
    server.answer(Reply(completion("ok")))
    wire: dict[str, JsonValue] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [function_call("call_0", "check_status", '{"service": "Z"}')],
    }
    request = ModelRequest(
        purpose=Purpose.ACT,
        messages=[wire, {"role": "tool", "tool_call_id": "call_0", "content": "up"}],
    )
    await model_at(server).complete(request, ordinal=0)
    assert server.last.body["messages"][0] == wire


async def test_a_json_plan_is_parsed_into_an_object(server: LoopbackServer) -> None:
    server.answer(Reply(completion(json.dumps(PLAN))))
    request = ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True)

    response = await model_at(server).complete(request, ordinal=0)

    assert response.content == PLAN
    sent = server.last.body
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][0] == {
        "role": "system",
        "content": f"You operate services.\n\n{JSON_INSTRUCTION}",
    }


async def test_a_server_without_json_mode_is_asked_in_the_prompt_only(
    server: LoopbackServer,
) -> None:
    refusal = {"error": "'response_format.type' must be 'json_schema' or 'text'"}
    server.answer(
        Reply(refusal, status=400),
        Reply(completion(json.dumps(PLAN))),
        Reply(completion(json.dumps(PLAN))),
    )
    request = ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True)
    model = model_at(server)

    assert (await model.complete(request, ordinal=0)).content == PLAN
    assert (await model.complete(request, ordinal=1)).content == PLAN

    sent = [received.body for received in server.received]
    assert [("response_format" in body) for body in sent] == [True, False, False]
    assert all(JSON_INSTRUCTION in body["messages"][0]["content"] for body in sent)


async def test_json_in_a_code_fence_is_accepted(server: LoopbackServer) -> None:
    server.answer(Reply(completion('```json\n{"passed": true, "reason": "ok"}\n```')))
    request = ModelRequest(
        purpose=Purpose.VERIFY, messages=[{"role": "user", "content": "Passed?"}], json_output=True
    )
    response = await model_at(server).complete(request, ordinal=0)
    assert response.content == {"passed": True, "reason": "ok"}
    assert server.last.body["messages"][0] == {"role": "system", "content": JSON_INSTRUCTION}


@pytest.mark.parametrize(
    ("content", "finish_reason", "says"),
    [
        ("Here is the plan: step 1 ...", "stop", "Expecting value"),
        ('{"goal": "restart X", "steps": [', "length", "cut off at the token limit"),
        ("[1, 2]", "stop", "a JSON list where an object was asked for"),
        (None, "stop", "Expecting value"),
    ],
)
async def test_malformed_json_in_a_plan_is_not_retryable(
    server: LoopbackServer, content: str | None, finish_reason: str, says: str
) -> None:
    server.answer(Reply(completion(content, finish_reason=finish_reason)))
    request = ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True)

    error = await failure(model_at(server), request)

    assert error.retryable is False
    assert "test-model returned malformed JSON for a plan request" in error.message
    assert says in error.message
    assert "\n" not in error.message


async def test_malformed_tool_arguments_are_not_retryable(server: LoopbackServer) -> None:
    server.answer(Reply(completion(None, [function_call("call_a", "check_status", '{"service": X}')])))
    error = await failure(model_at(server))
    assert error.retryable is False
    assert "malformed JSON arguments for tool 'check_status'" in error.message


async def test_tool_arguments_that_are_not_an_object_are_not_retryable(
    server: LoopbackServer,
) -> None:
    server.answer(Reply(completion(None, [function_call("call_a", "check_status", '"X"')])))
    error = await failure(model_at(server))
    assert error.retryable is False
    assert "not a JSON object" in error.message


async def test_empty_tool_arguments_are_no_arguments(server: LoopbackServer) -> None:
    server.answer(Reply(completion(None, [function_call("call_a", "list_services", "")])))
    response = await model_at(server).complete(ACT, ordinal=0)
    assert response.tool_calls == [ToolCall(id="call_a", name="list_services", arguments={})]


async def test_a_server_that_reports_no_usage_has_its_tokens_estimated_and_said_once(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    body = completion("hi there")
    del body["usage"]
    server.answer(Reply(body), Reply(body), Reply(completion("hi")))
    model = model_at(server)

    response = await model.complete(ACT, ordinal=0)
    short = ModelRequest(
        purpose=Purpose.ACT, messages=ACT.messages, settings=ModelSettings(max_output_tokens=1)
    )
    capped = await model.complete(short, ordinal=0)
    reported = await model.complete(ACT, ordinal=0)

    sent = len(json.dumps([ACT.messages, ACT.tools], ensure_ascii=False))
    # Never a confident zero: about 4 characters a token, rounded up, and marked as a guess.
    assert response.usage == Usage(prompt_tokens=-(-sent // 4), completion_tokens=2, estimated=True)
    assert response.usage.model_dump()["estimated"] is True
    assert capped.usage.completion_tokens == 1  # never more than the most the request allowed
    assert "estimated" not in reported.usage.model_dump()  # counts the server gave read as they always did
    warned = [r.getMessage() for r in caplog.records if "reports no token usage" in r.getMessage()]
    assert len(warned) == 1, warned  # once for the server, not once a call
    assert f"{server.url}/v1" in warned[0]


# --------------------------------------------------------------------------- errors


async def test_a_rate_limit_is_retryable_after_the_wait_asked_for(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            error_body("Rate limit reached for requests", "rate_limit_exceeded"),
            status=429,
            headers={"Retry-After": "2"},
        )
    )
    error = await failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after) == (429, True, 2.0)
    assert error.message == "openai:test-model: HTTP 429: Rate limit reached for requests"
    assert len(server.received) == 1, "the SDK must not retry on its own"


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_error_is_retryable(server: LoopbackServer, status: int) -> None:
    server.answer(Reply(error_body("The server had an error"), status=status))
    error = await failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after) == (status, True, None)
    assert len(server.received) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_a_client_error_is_not_retryable(server: LoopbackServer, status: int) -> None:
    server.answer(Reply(error_body(f"refused with {status}"), status=status))
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (status, False)
    assert f"HTTP {status}: refused with {status}" in error.message


async def test_a_prompt_too_long_for_the_context_is_not_retryable(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            error_body("This model's maximum context length is 8192 tokens.", "context_length_exceeded"),
            status=400,
        )
    )
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (400, False)
    assert "does not fit the model's context" in error.message


async def test_a_plain_text_error_body_is_reported(server: LoopbackServer) -> None:
    server.answer(Reply("upstream unavailable", status=502))
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (502, True)
    assert "upstream unavailable" in error.message


async def test_a_refused_connection_is_retryable() -> None:
    model = OpenAIModel("test-model", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    error = await failure(model)
    assert (error.status, error.retryable) == (None, True)
    assert "cannot reach http://127.0.0.1:" in error.message


async def test_a_timeout_is_retryable(server: LoopbackServer) -> None:
    server.answer(Reply(completion("too late"), delay=1.0))
    error = await failure(model_at(server, timeout=0.2))
    assert (error.status, error.retryable) == (None, True)
    assert "within 0.2 s" in error.message


async def test_a_malformed_request_message_fails_before_any_request(
    server: LoopbackServer,
) -> None:
    request = ModelRequest(purpose=Purpose.ACT, messages=[{"role": "tool", "content": "up"}])
    error = await failure(model_at(server), request)
    assert error.retryable is False
    assert "message 0 of the act request is not a chat message" in error.message
    assert "tool_call_id" in error.message
    assert server.received == []


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


# --------------------------------------------------------------------------- construction


async def test_openai_names_resolve_without_any_request(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    model = resolve_model("openai:gpt-4o-mini")
    assert isinstance(model, OpenAIModel)
    assert (model.name, model.model, model.base_url) == (
        "openai:gpt-4o-mini",
        "gpt-4o-mini",
        f"{server.url}/v1",
    )
    assert server.received == []
    assert "no-key" not in repr(model) and "api_key" not in repr(model)

    server.answer(Reply(completion("hi")))
    assert (await model.complete(ACT, ordinal=0)).content == "hi"
    assert server.last.headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"


async def test_the_api_key_comes_from_the_environment(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.answer(Reply(completion("hi")))
    await OpenAIModel("m", base_url=f"{server.url}/v1").complete(ACT, ordinal=0)
    assert server.last.headers["authorization"] == "Bearer sk-from-env"


def test_openai_defaults_to_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve_model("openai:gpt-4o-mini").base_url == "https://api.openai.com/v1"  # type: ignore[attr-defined]


def test_openai_s_public_endpoint_without_a_key_is_one_line_at_once() -> None:
    with pytest.raises(InputError) as raised:
        resolve_model("openai:gpt-4o-mini")
    assert raised.value.message == (
        "openai:gpt-4o-mini needs an API key for https://api.openai.com/v1: set OPENAI_API_KEY, "
        "or point OPENAI_BASE_URL at your OpenAI-compatible server"
    )


async def test_a_model_the_server_does_not_know_fails_at_once(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("The model `gpt-5-mini-x` does not exist", "model_not_found"), status=404))
    model = OpenAIModel("gpt-5-mini-x", base_url=f"{server.url}/v1", api_key="sk-test")
    error = await failure(model)
    assert (error.status, error.retryable) == (404, False)
    assert error.message == (
        "openai:gpt-5-mini-x: the server has no model 'gpt-5-mini-x' "
        "(HTTP 404: The model `gpt-5-mini-x` does not exist); check the model name"
    )


async def test_ollama_is_the_openai_protocol_at_localhost(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = resolve_model("ollama:llama3.1")
    assert isinstance(default, OpenAIModel)
    assert (default.name, default.base_url) == ("ollama:llama3.1", OLLAMA_BASE_URL)

    monkeypatch.setenv("OLLAMA_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    model = resolve_model("ollama:llama3.1")
    server.answer(Reply(completion("hi")))
    assert (await model.complete(ACT, ordinal=0)).content == "hi"
    assert server.last.body["model"] == "llama3.1"
    assert server.last.headers["authorization"] == "Bearer ollama", "no OpenAI key sent to Ollama"


def test_one_model_serves_several_event_loops(server: LoopbackServer) -> None:
    model = model_at(server)
    server.answer(Reply(completion("one")), Reply(completion("two")))
    first = asyncio.run(model.complete(ACT, ordinal=0))
    second = asyncio.run(model.complete(ACT, ordinal=1))
    assert (first.content, second.content) == ("one", "two")

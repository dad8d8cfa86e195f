"""AnthropicModel against a real Messages API server on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from ratchet.providers import ModelError, ModelRequest, Purpose, ToolCall, Usage, resolve_model
from ratchet.providers._wire import JSON_INSTRUCTION
from ratchet.providers.anthropic import AnthropicModel

from ..helpers.loopback import LoopbackServer, Reply, closed_port

CHECK_STATUS: dict[str, JsonValue] = {
    "name": "check_status",
    "description": "The status of a service.",
    "parameters": {"type": "object", "properties": {"service": {"type": "string"}}},
}
ACT = ModelRequest(
    purpose=Purpose.ACT,
    messages=[
        {"role": "system", "content": "You operate services."},
        {"role": "user", "content": "Is X healthy?"},
    ],
)


def message(*blocks: dict[str, Any], stop_reason: str = "end_turn", input_tokens: int = 20) -> dict[str, Any]:
    """A Messages API answer as Anthropic's API writes it."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 9},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def error_body(kind: str, text_: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text_}}


def model_at(server: LoopbackServer) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="sk-ant-test", base_url=server.url)


def key_sent(headers: dict[str, str]) -> str | None:
    """The API key a request carried: older SDKs send ``x-api-key``, newer a bearer token."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    return headers.get("authorization", "").removeprefix("Bearer ") or None


async def failure(model: AnthropicModel) -> ModelError:
    with pytest.raises(ModelError) as raised:
        await model.complete(ACT, ordinal=0)
    return raised.value


async def test_a_plain_answer_with_its_usage(server: LoopbackServer) -> None:
    server.answer(Reply(message(text("X is "), text("healthy."))))

    response = await model_at(server).complete(ACT, ordinal=2)

    assert response.content == "X is healthy."
    assert response.tool_calls == []
    assert response.usage == Usage(prompt_tokens=20, completion_tokens=9)
    assert response.ordinal == 2
    assert (response.response_id, response.finish_reason) == ("msg_1", "end_turn")  # for its span
    sent = server.last
    assert sent.path == "/v1/messages"
    assert key_sent(sent.headers) == "sk-ant-test"
    assert "anthropic-version" in sent.headers
    assert sent.body["model"] == "claude-test"
    assert sent.body["max_tokens"] == 4096
    assert sent.body["system"] == "You operate services."
    assert sent.body["messages"] == [{"role": "user", "content": [text("Is X healthy?")]}]
    assert "tools" not in sent.body


async def test_tool_use_and_the_history_that_carries_it(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            message(
                text("Checking."),
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "check_status",
                    "input": {"service": "X"},
                },
                stop_reason="tool_use",
            )
        )
    )
    request = ModelRequest(
        purpose=Purpose.ACT,
        messages=[
            *ACT.messages,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "toolu_a", "name": "check_status", "arguments": {"service": "Y"}},
                    {
                        "id": "toolu_b",
                        "type": "function",
                        "function": {"name": "check_status", "arguments": '{"service": "Z"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_a", "content": {"up": True}},
            {"role": "tool", "tool_call_id": "toolu_b", "content": "down"},
            {"role": "user", "content": "And X?"},
        ],
        tools=[CHECK_STATUS],
    )

    response = await model_at(server).complete(request, ordinal=0)

    assert response.content == "Checking."
    assert response.tool_calls == [ToolCall(id="toolu_1", name="check_status", arguments={"service": "X"})]
    sent = server.last.body
    assert sent["tools"] == [
        {
            "name": "check_status",
            "description": "The status of a service.",
            "input_schema": CHECK_STATUS["parameters"],
        }
    ]
    assert sent["messages"] == [
        {"role": "user", "content": [text("Is X healthy?")]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_a",
                    "name": "check_status",
                    "input": {"service": "Y"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_b",
                    "name": "check_status",
                    "input": {"service": "Z"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": '{"up": true}'},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "down"},
                text("And X?"),
            ],
        },
    ]


async def test_json_output_is_asked_for_in_the_system_prompt(server: LoopbackServer) -> None:
    server.answer(Reply(message(text(json.dumps({"passed": False, "reason": "X is down"})))))
    request = ModelRequest(purpose=Purpose.VERIFY, messages=ACT.messages, json_output=True)

    response = await model_at(server).complete(request, ordinal=0)

    assert response.content == {"passed": False, "reason": "X is down"}
    assert server.last.body["system"] == f"You operate services.\n\n{JSON_INSTRUCTION}"


async def test_malformed_json_is_not_retryable(server: LoopbackServer) -> None:
    server.answer(Reply(message(text('{"passed": tru'), stop_reason="max_tokens")))
    request = ModelRequest(purpose=Purpose.VERIFY, messages=ACT.messages, json_output=True)
    with pytest.raises(ModelError) as raised:
        await model_at(server).complete(request, ordinal=0)
    assert raised.value.retryable is False
    assert "returned malformed JSON for a verify request" in raised.value.message
    assert "cut off at the token limit" in raised.value.message


async def test_a_rate_limit_is_retryable_after_the_wait_asked_for(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            error_body("rate_limit_error", "Number of requests has exceeded your rate limit"),
            status=429,
            headers={"retry-after": "2"},
        )
    )
    error = await failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after) == (429, True, 2.0)
    assert "exceeded your rate limit" in error.message
    assert len(server.received) == 1, "the SDK must not retry on its own"


async def test_overloaded_is_retryable(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("overloaded_error", "Overloaded"), status=529))
    error = await failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after) == (529, True, None)
    assert error.message == "anthropic:claude-test: HTTP 529: Overloaded"
    assert len(server.received) == 1


@pytest.mark.parametrize("status", [400, 401])
async def test_a_client_error_is_not_retryable(server: LoopbackServer, status: int) -> None:
    server.answer(Reply(error_body("invalid_request_error", "bad request"), status=status))
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (status, False)


async def test_a_prompt_too_long_is_not_retryable(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
            status=400,
        )
    )
    error = await failure(model_at(server))
    assert error.retryable is False
    assert "does not fit the model's context" in error.message


async def test_a_refused_connection_is_retryable() -> None:
    model = AnthropicModel("claude-test", api_key="k", base_url=f"http://127.0.0.1:{closed_port()}")
    error = await failure(model)
    assert (error.status, error.retryable) == (None, True)


async def test_no_credentials_is_not_retryable(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no profile on disk either
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    error = await failure(AnthropicModel("claude-test", base_url=server.url))
    assert error.retryable is False
    assert "set ANTHROPIC_API_KEY" in error.message
    assert server.received == []


async def test_anthropic_names_resolve_without_any_request(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    model = resolve_model("anthropic:claude-test")
    assert isinstance(model, AnthropicModel)
    assert (model.name, model.base_url) == ("anthropic:claude-test", server.url)
    assert "sk-ant-env" not in repr(model)
    assert server.received == []

    server.answer(Reply(message(text("hi"))))
    assert (await model.complete(ACT, ordinal=0)).content == "hi"
    assert key_sent(server.last.headers) == "sk-ant-env"

"""Choosing a provider by ``provider:name``, the request and response records, ModelError."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ratchet.errors import InputError, RatchetError
from ratchet.providers import (
    ModelError,
    ModelRequest,
    ModelResponse,
    Purpose,
    ScriptedModel,
    ToolCall,
    Usage,
    is_retryable_status,
    resolve_model,
)

# ------------------------------------------------------------------ resolve_model


def test_scripted_resolves_to_a_scripted_model(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"act": [{"content": "hi"}]}', encoding="utf-8")
    model = resolve_model(f"scripted:{path}")
    assert isinstance(model, ScriptedModel)
    assert model.path == path.resolve()
    assert model.name == f"scripted:{path}"


def test_a_scripted_model_with_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no script file"):
        resolve_model(f"scripted:{tmp_path / 'missing.json'}")


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("openai:gpt-4o-mini", "OpenAIModel"),
        ("ollama:llama3.1", "OpenAIModel"),
        ("anthropic:claude-x", "AnthropicModel"),
        ("litellm:gemini/gemini-1.5-pro", "LiteLLMModel"),
    ],
)
def test_every_provider_resolves_without_network(
    spec: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # OpenAI's public endpoint needs one
    assert type(resolve_model(spec)).__name__ == kind


@pytest.mark.parametrize("spec", ["gpt-4o-mini", "mistral:large", "", ":x", "Scripted:x.json"])
def test_an_unknown_provider_lists_the_known_ones(spec: str) -> None:
    with pytest.raises(InputError) as raised:
        resolve_model(spec)
    message = raised.value.message
    assert "\n" not in message
    assert repr(spec) in message
    assert "anthropic, litellm, ollama, openai, scripted" in message
    assert "provider:name" in message


def test_a_provider_without_a_name_is_an_input_error() -> None:
    with pytest.raises(InputError, match="names no model after 'scripted'"):
        resolve_model("scripted:")


# ------------------------------------------------------------------ records


def test_a_request_purpose_is_one_of_the_five() -> None:
    assert ModelRequest.model_validate({"purpose": "verify"}).purpose is Purpose.VERIFY
    assert [p.value for p in Purpose] == ["plan", "act", "verify", "replan", "summarize"]
    with pytest.raises(ValidationError):
        ModelRequest.model_validate({"purpose": "chat"})


def test_records_are_frozen_and_round_trip_as_json() -> None:
    response = ModelResponse(
        content={"passed": True},
        tool_calls=[ToolCall(id="c", name="t", arguments={"a": [1, None]})],
        usage=Usage(prompt_tokens=3, completion_tokens=4, cost=0.5),
        ordinal=2,
    )
    assert ModelResponse.from_json(response.to_json()) == response
    assert response.usage.total_tokens == 7
    with pytest.raises(ValidationError):
        response.ordinal = 3


def test_defaults_are_empty() -> None:
    response = ModelResponse()
    assert (response.content, response.tool_calls, response.ordinal) == (None, [], None)
    assert response.usage == Usage(prompt_tokens=0, completion_tokens=0, cost=None)  # priced by the engine
    request = ModelRequest(purpose=Purpose.ACT)
    assert (request.messages, request.tools, request.json_output) == ([], [], False)


# ------------------------------------------------------------------ ModelError


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (None, True),
        (408, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (529, True),
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (413, False),
        (422, False),
    ],
)
def test_retryable_by_status(status: int | None, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable
    error = ModelError.from_status(status, "boom")
    assert (error.status, error.retryable, error.message) == (status, retryable, "boom")


def test_from_status_keeps_retry_after_and_names_the_status_by_default() -> None:
    error = ModelError.from_status(429, retry_after=2.5)
    assert error.retry_after == 2.5
    assert "429" in error.message
    assert "timeout" in ModelError.from_status(None).message


def test_a_model_error_is_a_ratchet_error_not_retryable_by_default() -> None:
    error = ModelError()
    assert isinstance(error, RatchetError)
    assert error.message == "The model provider failed to answer."
    assert (error.status, error.retry_after, error.retryable) == (None, None, False)
    assert "retryable=False" in repr(error)

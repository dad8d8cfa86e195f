"""Model settings against real HTTP servers on loopback: each provider's names for them, and its refusals."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ratchet.errors import InputError
from ratchet.providers import (
    ModelError,
    ModelRequest,
    ModelSettings,
    UnsupportedSetting,
    resolve_model,
)
from ratchet.providers._structured import EndpointFormats
from ratchet.providers.anthropic import AnthropicModel
from ratchet.providers.litellm import LiteLLMModel
from ratchet.providers.openai_compat import OpenAIModel
from ratchet.providers.settings import settings_from

from ..helpers.loopback import LoopbackServer, Reply
from .test_anthropic import message, text
from .test_openai_compat import ACT, completion, error_body

EVERY_SETTING = ModelSettings(temperature=0.3, max_output_tokens=256, seed=7, reasoning_effort="low")
SETTING_KEYS = ("temperature", "max_tokens", "max_completion_tokens", "seed", "reasoning_effort")


def with_settings(settings: ModelSettings | None, request: ModelRequest = ACT) -> ModelRequest:
    return request.model_copy(update={"settings": settings})


def settings_sent(body: dict[str, Any]) -> dict[str, Any]:
    return {key: body[key] for key in SETTING_KEYS if key in body}


# --------------------------------------------------------------------------- OpenAI-compatible servers


def openai_at(server: LoopbackServer, formats: EndpointFormats | None = None) -> OpenAIModel:
    return OpenAIModel("test-model", base_url=f"{server.url}/v1", api_key="sk-test", formats=formats)


async def test_an_openai_compatible_server_gets_every_setting_by_openai_s_names(
    server: LoopbackServer,
) -> None:
    server.answer(Reply(completion("hi")))

    await openai_at(server).complete(with_settings(EVERY_SETTING), ordinal=0)

    assert settings_sent(server.last.body) == {
        "temperature": 0.3,
        "max_tokens": 256,
        "seed": 7,
        "reasoning_effort": "low",
    }


async def test_a_request_without_settings_sends_none_of_them(server: LoopbackServer) -> None:
    server.answer(Reply(completion("hi")), Reply(completion("hi")))

    await openai_at(server).complete(ACT, ordinal=0)
    await openai_at(server).complete(with_settings(ModelSettings(seed=3)), ordinal=1)

    assert settings_sent(server.received[0].body) == {}
    # Only what is set goes: the server's defaults hold for the rest.
    assert settings_sent(server.received[1].body) == {"seed": 3}


async def test_a_server_asking_for_max_completion_tokens_gets_it_and_is_remembered(
    server: LoopbackServer,
) -> None:
    # OpenAI's reasoning models, word for word.
    refusal = error_body(
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        code="unsupported_parameter",
    )
    server.answer(Reply(refusal, status=400), Reply(completion("one")), Reply(completion("two")))
    formats = EndpointFormats()
    request = with_settings(ModelSettings(max_output_tokens=300))

    assert (await openai_at(server, formats).complete(request, ordinal=0)).content == "one"
    assert (await openai_at(server, formats).complete(request, ordinal=1)).content == "two"

    assert [settings_sent(r.body) for r in server.received] == [
        {"max_tokens": 300},
        {"max_completion_tokens": 300},
        {"max_completion_tokens": 300},  # the next request, from another provider object, asks so at once
    ]


async def test_a_server_refusing_a_setting_fails_the_call_quoting_it(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("Unrecognized request argument supplied: reasoning_effort"), status=400))

    with pytest.raises(ModelError) as raised:
        await openai_at(server).complete(with_settings(ModelSettings(reasoning_effort="high")), ordinal=0)

    assert (raised.value.status, raised.value.retryable) == (400, False)
    assert "reasoning_effort" in str(raised.value)
    assert len(server.received) == 1


async def test_ollama_gets_the_settings_by_the_names_of_its_openai_compatible_api(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", f"{server.url}/v1")
    server.answer(Reply(completion("hi")))

    settings = ModelSettings(temperature=0.0, max_output_tokens=64, seed=11)
    await resolve_model("ollama:llama3.1").complete(with_settings(settings), ordinal=0)

    assert settings_sent(server.last.body) == {"temperature": 0.0, "max_tokens": 64, "seed": 11}


# --------------------------------------------------------------------------- Anthropic


def anthropic_at(server: LoopbackServer) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="sk-ant-test", base_url=server.url)


async def test_anthropic_gets_max_tokens_and_the_effort(server: LoopbackServer) -> None:
    server.answer(Reply(message(text("hi"))), Reply(message(text("hi"))))
    model = anthropic_at(server)

    settings = ModelSettings(max_output_tokens=900, reasoning_effort="medium")
    await model.complete(with_settings(settings), ordinal=0)
    await model.complete(ACT, ordinal=1)

    first, second = (r.body for r in server.received)
    assert (first["max_tokens"], first["output_config"]) == (900, {"effort": "medium"})
    # Without settings: the provider's own limit (the API requires one), and the API's effort.
    assert second["max_tokens"] == 4096 and "output_config" not in second


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (ModelSettings(seed=7), "anthropic:claude-test takes no seed: Anthropic's Messages API has none"),
        (
            ModelSettings(temperature=0.5),
            "anthropic:claude-test takes no temperature: Anthropic's Messages API refuses sampling "
            "parameters since its version 2026-10-21",
        ),
    ],
    ids=["seed", "temperature"],
)
async def test_anthropic_refuses_what_its_api_cannot_take_before_any_request(
    server: LoopbackServer, settings: ModelSettings, said: str
) -> None:
    with pytest.raises(UnsupportedSetting) as raised:
        await anthropic_at(server).complete(with_settings(settings), ordinal=0)

    refused = raised.value
    assert str(refused) == said
    # A call no retry can cure, and bad input where a person gave it.
    assert isinstance(refused, ModelError) and not refused.retryable
    assert isinstance(refused, InputError)
    assert server.received == []
    # The same check, asked before any task exists (`ratchet run`, `submit`).
    with pytest.raises(UnsupportedSetting, match="takes no"):
        anthropic_at(server).check_settings(settings)


# --------------------------------------------------------------------------- LiteLLM


async def test_litellm_gets_the_settings_by_openai_s_names(server: LoopbackServer) -> None:
    server.answer(Reply(completion("hi")))
    model = LiteLLMModel("openai/test-model", base_url=f"{server.url}/v1", api_key="sk-test")

    await model.complete(with_settings(EVERY_SETTING), ordinal=0)

    # LiteLLM forwards them to the OpenAI-protocol server under the same names.
    assert settings_sent(server.last.body) == {
        "temperature": 0.3,
        "max_tokens": 256,
        "seed": 7,
        "reasoning_effort": "low",
    }


async def test_litellm_refuses_a_setting_it_would_drop_for_the_provider(server: LoopbackServer) -> None:
    model = LiteLLMModel("anthropic/claude-test", base_url=server.url, api_key="sk-ant-test")

    with pytest.raises(UnsupportedSetting) as raised:
        await model.complete(with_settings(ModelSettings(temperature=0.2, seed=7)), ordinal=0)

    assert str(raised.value) == (
        "litellm:anthropic/claude-test takes no seed: LiteLLM sends no 'seed' to anthropic"
    )
    assert not raised.value.retryable
    assert server.received == []


# --------------------------------------------------------------------------- the values


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"temperature": 2.5}, "temperature: Input should be less than or equal to 2"),
        ({"temperature": -0.1}, "temperature: Input should be greater than or equal to 0"),
        ({"temperature": float("nan")}, "temperature: Input should be a finite number"),
        ({"max_output_tokens": 0}, "max_output_tokens: Input should be greater than or equal to 1"),
        ({"seed": 2**63}, "seed: Input should be less than 9223372036854775808"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort: Input should be 'low', 'medium' or 'high'"),
        ({"temprature": 1}, "temprature: Extra inputs are not permitted"),
    ],
)
def test_a_value_out_of_its_range_is_one_line(values: dict[str, object], said: str) -> None:
    with pytest.raises(InputError) as raised:
        settings_from(values)
    assert str(raised.value) == f"model settings: {said}"
    with pytest.raises(ValidationError):
        ModelSettings.model_validate(values)


def test_values_at_the_ends_of_their_ranges_are_taken() -> None:
    low = settings_from({"temperature": 0, "max_output_tokens": 1, "seed": -(2**63)})
    high = settings_from({"temperature": 2, "seed": 2**63 - 1, "reasoning_effort": "high"})
    assert low == ModelSettings(temperature=0.0, max_output_tokens=1, seed=-(2**63))
    assert high == ModelSettings(temperature=2.0, seed=2**63 - 1, reasoning_effort="high")
    assert settings_from({"temperature": None}) is None

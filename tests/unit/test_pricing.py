"""`ratchet.pricing`: a cost from genai-prices' bundled table; None when no price is known; no network."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import genai_prices  # the `prices` extra (in `test`)
import pytest

from ratchet.errors import InputError
from ratchet.pricing import (
    check_priced_as,
    cost_of,
    price_unpriced_as,
    priced_as_default,
    priced_model,
    unpriced_message,
)
from ratchet.providers import ScriptedModel, Usage
from ratchet.providers.openai_compat import OpenAIModel

USAGE = Usage(prompt_tokens=1000, completion_tokens=500)


def _table(model: str, **where: Any) -> float:
    calculation = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1000, output_tokens=500), model, **where
    )
    return float(calculation.total_price)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A price lookup must not reach the network: every connection attempt fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"pricing tried to connect: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_a_known_model_is_priced_from_the_bundled_table() -> None:
    cost = cost_of("openai", "gpt-4o", USAGE)
    assert cost == pytest.approx(_table("gpt-4o", provider_id="openai"))
    assert cost is not None and cost > 0
    assert cost_of("anthropic", "claude-sonnet-4-5", USAGE) == pytest.approx(
        _table("claude-sonnet-4-5", provider_id="anthropic")
    )


def test_an_unknown_model_or_provider_has_no_price_not_zero() -> None:
    assert cost_of("openai", "no-such-model-anywhere", USAGE) is None
    assert cost_of("ollama", "llama3.1", USAGE) is None
    assert cost_of("myprovider", "x", USAGE) is None


def test_the_server_a_call_went_to_picks_the_provider_priced() -> None:
    assert cost_of("openai", "gpt-4o", USAGE, api_url="https://api.openai.com/v1") == pytest.approx(
        _table("gpt-4o", provider_id="openai")
    )
    # A server of one's own serving a model under OpenAI's name: not OpenAI's bill.
    assert cost_of("openai", "gpt-4o", USAGE, api_url="http://localhost:8000/v1") is None
    groq = cost_of("openai", "llama-3.1-8b-instant", USAGE, api_url="https://api.groq.com/openai/v1")
    assert groq == pytest.approx(_table("llama-3.1-8b-instant", provider_id="groq"))


def test_a_scripted_model_costs_nothing() -> None:
    assert cost_of("scripted", "/any/script.json", USAGE) == 0.0


def test_litellm_models_fall_back_to_the_table_by_the_provider_in_their_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # as where LiteLLM is not installed: no import
    assert cost_of("litellm", "gemini/gemini-1.5-pro", USAGE) == pytest.approx(
        _table("gemini/gemini-1.5-pro", provider_id="litellm")
    )
    assert cost_of("litellm", "nowhere/no-such-model", USAGE) is None


def test_a_provider_is_priced_by_its_name_and_server_or_by_what_it_declares(tmp_path: Path) -> None:
    assert priced_model(OpenAIModel("gpt-4o", api_key="k", base_url="http://localhost:1/v1")) == (
        "openai",
        "gpt-4o",
        "http://localhost:1/v1",
    )
    path = tmp_path / "script.json"
    path.write_text('{"priced_as": "openai:gpt-4o-mini"}')
    assert priced_model(ScriptedModel(path)) == ("openai", "gpt-4o-mini", None)
    path.write_text("{}")
    assert priced_model(ScriptedModel(path)) == ("scripted", str(path), None)


def test_the_warning_names_the_model_and_says_its_cost_is_not_counted() -> None:
    assert unpriced_message("openai", "foo") == "no price is known for openai:foo; its cost is not counted"


def test_a_server_no_table_knows_is_named_in_the_warning_with_the_priced_as_that_would_price_it() -> None:
    assert unpriced_message("gw", "gpt-4o", api_url="http://user:secret@127.0.0.1:4000/v1?key=k") == (
        "no price is known for gw:gpt-4o at http://127.0.0.1:4000/v1, a server no price table knows; "
        'its cost is not counted: if it bills as a known model, set priced_as = "openai:gpt-4o" '
        "on its endpoint in ratchet.toml (or pass --priced-as)"
    )
    assert 'priced_as = "anthropic:claude-sonnet-4-5"' in unpriced_message(
        "gw", "claude-sonnet-4-5", api_url="http://127.0.0.1:4000/v1"
    )
    assert 'priced_as = "openai:gpt-4o"' in unpriced_message("gw", "house-model", api_url="http://gw/v1")
    # A server the table knows is not blamed: the model is unknown there.
    assert unpriced_message("openai", "foo", api_url="https://api.openai.com/v1") == (
        "no price is known for openai:foo; its cost is not counted"
    )


def test_priced_as_must_name_a_model_a_table_prices() -> None:
    assert check_priced_as(" openai:gpt-4o ", where="--priced-as") == "openai:gpt-4o"
    with pytest.raises(InputError, match=r"^--priced-as 'gpt-4o' must be provider:name"):
        check_priced_as("gpt-4o", where="--priced-as")
    with pytest.raises(InputError, match="names a model no price table knows"):
        check_priced_as("openai:no-such-model-anywhere", where="--priced-as")
    with pytest.raises(InputError, match="names a model no price table knows"):
        check_priced_as("scripted:script.json", where="--priced-as")  # a script costs nothing: no price


def test_the_command_s_priced_as_is_checked_when_set() -> None:
    with pytest.raises(InputError, match="--priced-as"):
        price_unpriced_as("openai:no-such-model-anywhere")
    assert priced_as_default() is None
    price_unpriced_as("openai:gpt-4o-mini")
    try:
        assert priced_as_default() == "openai:gpt-4o-mini"
    finally:
        price_unpriced_as(None)
    assert priced_as_default() is None


def test_without_the_table_installed_nothing_is_priced_and_the_warning_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if the `prices` extra were not installed

    assert cost_of("openai", "gpt-4o", USAGE) is None
    assert cost_of("scripted", "script.json", USAGE) == 0.0
    assert "pip install 'ratchet-runtime[prices]'" in unpriced_message("openai", "gpt-4o")
    with pytest.raises(InputError, match=r"needs the price table: pip install 'ratchet-runtime\[prices\]'"):
        check_priced_as("openai:gpt-4o", where="--priced-as")

"""What a model call cost, in US dollars, from a maintained price table (docs/limits.md).

`cost_of(provider, model, usage)` prices the tokens a call used: for
``litellm:`` models from LiteLLM's own table when LiteLLM is installed, else
(and for every other provider) from the ``genai-prices`` package's bundled
table (the ``prices`` extra; the ``openai`` and ``anthropic`` extras bring it).
Nothing here reaches the network: genai-prices' bundled data is read, never its
updater, and LiteLLM is told to use its local copy. A model neither table
knows, or a server of one's own (a base URL no known provider serves), has no
price: None, never 0, so a reader can tell "free" from "not known".

The engine prices each live call once, and the journal keeps the figure: a
replayed call reuses it and is never priced again.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Protocol

__all__ = ["TokenCounts", "cost_of", "priced_model", "unpriced_message"]


class TokenCounts(Protocol):
    """What a call used, as `ratchet.providers.Usage` tells it (read only)."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def priced_model(model: _Named) -> tuple[str, str, str | None]:
    """``(provider, model name, API URL)`` to price `model`'s calls by.

    A provider may say which model its calls are billed as with a
    ``priced_as`` attribute (``"openai:gpt-4o"``; the scripted model reads it
    from its script), else its ``name`` is used; its ``base_url``, when it has
    one, picks the provider the URL belongs to (a local server has no price).
    """
    declared = getattr(model, "priced_as", None)
    spec = declared if isinstance(declared, str) and declared else model.name
    provider, _, name = spec.partition(":")
    base_url = None if declared else getattr(model, "base_url", None)
    return provider, name, base_url if isinstance(base_url, str) else None


def cost_of(provider: str, model: str, usage: TokenCounts, *, api_url: str | None = None) -> float | None:
    """What `usage` of ``provider:model`` cost in US dollars, or None when no price is known.

    Args:
        provider: the part of the model string before the colon (``openai``,
            ``anthropic``, ``litellm``, ...).
        model: the part after it (``gpt-4o``; for LiteLLM ``gemini/gemini-1.5-pro``).
        usage: the tokens the call used.
        api_url: the server the call went to, when known: the provider that
            serves it is priced (an OpenAI-compatible URL of Groq: Groq's
            prices; a server of one's own: None).
    """
    if provider == "scripted":
        return 0.0  # a script answers for nothing (one that declares ``priced_as`` is priced as that)
    if provider == "litellm":
        cost = _litellm_cost(model, usage)
        if cost is not None:
            return cost
        api_url = None  # LiteLLM names the provider in the model: "gemini/gemini-1.5-pro"
    return _genai_prices_cost(provider, model, usage, api_url)


def unpriced_message(provider: str, model: str) -> str:
    """Why a call of ``provider:model`` has no cost, in one line."""
    spec = f"{provider}:{model}"
    if _genai_prices() is None:
        return (
            f"no price is known for {spec} (the price table is not installed: "
            "pip install 'ratchet-runtime[prices]'); its cost is not counted"
        )
    return f"no price is known for {spec}; its cost is not counted"


def _genai_prices() -> Any:
    try:
        return importlib.import_module("genai_prices")
    except ImportError:
        return None


def _genai_prices_cost(provider: str, model: str, usage: TokenCounts, api_url: str | None) -> float | None:
    prices = _genai_prices()
    if prices is None:
        return None
    tokens = prices.Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
    where: dict[str, str] = {"provider_api_url": api_url} if api_url else {"provider_id": provider}
    try:
        calculation = prices.calc_price(tokens, model, **where)
    except LookupError:
        return None
    return float(calculation.total_price)


def _litellm_cost(model: str, usage: TokenCounts) -> float | None:
    # LiteLLM fetches its price map over the network when imported unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        litellm = importlib.import_module("litellm")
    except ImportError:
        return None
    try:
        prompt, completion = litellm.cost_per_token(
            model=model, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
        )
    except Exception:  # LiteLLM raises its own errors for a model it has no price for
        return None
    return float(prompt) + float(completion)

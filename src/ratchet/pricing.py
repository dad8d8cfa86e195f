"""What a model call cost, in US dollars, from a maintained price table (docs/limits.md).

`cost_of(provider, model, usage)` prices the tokens a call used: for
``litellm:`` models from LiteLLM's own table when LiteLLM is installed, else
(and for every other provider) from the ``genai-prices`` package's bundled
table (the ``prices`` extra; the ``openai`` and ``anthropic`` extras bring it).
Nothing here reaches the network: genai-prices' bundled data is read, never its
updater, and LiteLLM is told to use its local copy. A model neither table
knows, or a server of one's own (a base URL no known provider serves), has no
price: None, never 0, so a reader can tell "free" from "not known".

A server the tables do not know may bill as a model they do (a LiteLLM proxy,
Cloudflare AI Gateway, Helicone or a company gateway in front of OpenAI): its
endpoint in ``ratchet.toml`` says so with ``priced_as = "openai:gpt-4o"``, and
``ratchet run --priced-as`` / ``ratchet worker --priced-as`` say it for every
call of the process no table prices (`priced_as_default`). `check_priced_as`
refuses, at once, a model no table prices: a ``priced_as`` that prices nothing
would leave ``max_cost`` as unheld as no ``priced_as`` at all.

The engine prices each live call once, and the journal keeps the figure: a
replayed call reuses it and is never priced again.
"""

from __future__ import annotations

import contextvars
import importlib
import os
import re
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from .errors import InputError

__all__ = [
    "PRICED_AS_PATTERN",
    "TokenCounts",
    "check_priced_as",
    "cost_of",
    "price_unpriced_as",
    "priced_as_default",
    "priced_model",
    "unpriced_message",
]

# What a ``priced_as`` looks like: a model string, ``provider:name``.
PRICED_AS_PATTERN = r"^[^:\s]+:\S+$"

# The model this command prices the calls no table prices as (``--priced-as``): set once per
# command by the CLI, seen by every task it runs. A context variable, so nothing needs resetting.
_DEFAULT: contextvars.ContextVar[str | None] = contextvars.ContextVar("ratchet_priced_as", default=None)


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


def check_priced_as(spec: str, *, where: str) -> str:
    """`spec` (``"openai:gpt-4o"``) if a price table prices it, as a ``priced_as`` must.

    Args:
        where: who gave it, to begin the message (``--priced-as``,
            ``ratchet.toml, [endpoints.gw]: priced_as``).

    Raises:
        InputError: it is not ``provider:name``, the price table is not
            installed, or no table knows the model.
    """
    spec = spec.strip()
    if not re.match(PRICED_AS_PATTERN, spec):
        raise InputError(f'{where} {spec!r} must be provider:name, e.g. "openai:gpt-4o"')
    if _genai_prices() is None and not spec.startswith("litellm:"):
        raise InputError(f"{where} {spec!r} needs the price table: pip install 'ratchet-runtime[prices]'")
    provider, _, name = spec.partition(":")
    if provider == "scripted" or cost_of(provider, name, _Tokens(1000, 1000)) is None:
        raise InputError(
            f'{where} {spec!r} names a model no price table knows; give one it prices, e.g. "openai:gpt-4o"'
        )
    return spec


def price_unpriced_as(spec: str | None) -> None:
    """Price this command's calls that no table prices as `spec` from now on (None: leave them unpriced).

    `spec` is checked first (`check_priced_as`, naming ``--priced-as``).

    Raises:
        InputError: `spec` is no model a table prices.
    """
    _DEFAULT.set(None if spec is None else check_priced_as(spec, where="--priced-as"))


def priced_as_default() -> str | None:
    """The model this command prices the calls no table prices as (``--priced-as``), or None."""
    return _DEFAULT.get()


def unpriced_message(provider: str, model: str, *, api_url: str | None = None) -> str:
    """Why a call of ``provider:model`` has no cost, in one line; with `api_url` (the server it
    went to, which no table knows), the URL and how to say what it bills as."""
    spec = f"{provider}:{model}"
    if _genai_prices() is None:
        return (
            f"no price is known for {spec} (the price table is not installed: "
            "pip install 'ratchet-runtime[prices]'); its cost is not counted"
        )
    if api_url is not None and not _knows_url(api_url):
        return (
            f"no price is known for {spec} at {_shown_url(api_url)}, a server no price table knows; "
            f'its cost is not counted: if it bills as a known model, set priced_as = "{_example(model)}" '
            "on its endpoint in ratchet.toml (or pass --priced-as)"
        )
    return f"no price is known for {spec}; its cost is not counted"


def _knows_url(api_url: str) -> bool:
    """Whether the price table knows the provider serving `api_url` (OpenAI's, Groq's ...)."""
    try:
        snapshot = importlib.import_module("genai_prices.data_snapshot").get_snapshot()
        snapshot.find_provider(None, None, api_url)
    except (ImportError, AttributeError, LookupError):  # not installed, another version's API, not known
        return False
    return True


def _shown_url(url: str) -> str:
    """`url` without what may be a secret: a user and password, a query (some gateways take a key there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass(frozen=True)
class _Tokens:
    prompt_tokens: int
    completion_tokens: int


def _example(model: str) -> str:
    """A ``priced_as`` for `model` a table prices: the same name at OpenAI or Anthropic, else gpt-4o's."""
    for provider in ("openai", "anthropic"):
        if _genai_prices_cost(provider, model, _Tokens(1000, 1000), None) is not None:
            return f"{provider}:{model}"
    return "openai:gpt-4o"


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

"""Which provider a ``provider:name`` string names: built-ins, registered ones, entry points, endpoints.

A prefix is looked up, in order, among:

1. the providers this process knows: the built-ins and those given to
   `register_provider`;
2. the named endpoints of the project's config file (`ratchet.providers.endpoints`):
   ``gpu:qwen2.5`` with an ``[endpoints.gpu]`` table is that table's provider,
   at its URL, with its key;
3. the ``ratchet.providers`` entry points of the installed distributions,
   read the first time a prefix is found in neither (importing every
   installed provider package up front would slow down every ``import ratchet``).

A task records only the string; every worker resolves it the same way, with
its own code and config, so neither a URL nor a key is kept in the database.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ratchet.errors import InputError, RatchetError

from .anthropic import AnthropicModel
from .base import ModelProvider
from .endpoints import Endpoint, find_endpoint
from .litellm import LiteLLMModel
from .openai_compat import OpenAIModel
from .scripted import ScriptedModel

__all__ = ["ENTRY_POINT_GROUP", "ProviderFactory", "is_model_prefix", "register_provider", "resolve_model"]

ENTRY_POINT_GROUP = "ratchet.providers"

ProviderFactory = Callable[..., ModelProvider]
"""Builds a provider from the model name (the part after ``prefix:``).

A factory that also takes ``base_url`` and ``api_key`` keywords can serve a
named endpoint (``[endpoints.NAME]`` in the config file).
"""

_PREFIX = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")

# Each provider's factory takes the part after "provider:".
_providers: dict[str, ProviderFactory] = {
    "scripted": ScriptedModel,
    "openai": OpenAIModel,
    "ollama": OpenAIModel.ollama,
    "anthropic": AnthropicModel,
    "litellm": LiteLLMModel,
}
# The entry points not loaded yet, by prefix; None until the group is first read.
_pending: dict[str, EntryPoint] | None = None


def register_provider(prefix: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``prefix:MODEL`` strings build their provider with ``factory(MODEL)``.

    Call it where every process that runs the tasks imports it (the module
    given to ``ratchet worker --agents``), or ship the factory as a
    ``ratchet.providers`` entry point, which every process finds by itself
    (docs/providers.md, "Adding a provider").

    Args:
        prefix: lower-case letters, digits, ``_``, ``-`` or ``.``, starting with a letter.
        factory: takes the model name and returns a `ModelProvider`; it
            should do no I/O (a bad name then fails at the first request).
        replace: allow replacing a provider already registered under ``prefix``.

    Raises:
        InputError: the prefix is malformed, or taken and ``replace`` is not set.
    """
    if not _PREFIX.match(prefix):
        raise InputError(
            f"provider prefix {prefix!r}: use lower-case letters, digits, '_', '-' or '.', "
            "starting with a letter"
        )
    if not callable(factory):
        raise InputError(f"provider {prefix!r}: the factory {factory!r} is not callable")
    if prefix in _providers and _providers[prefix] is not factory and not replace:
        raise InputError(f"provider {prefix!r} is already registered; pass replace=True to replace it")
    _providers[prefix] = factory


def resolve_model(spec: str) -> ModelProvider:
    """The model a ``provider:name`` string names, e.g. ``scripted:demo/script.json``.

    Raises:
        InputError: the string names no known provider or endpoint, or no
            model, or a provider that cannot be built (a missing script file,
            a missing SDK, no API key for OpenAI's public endpoint).
    """
    prefix, colon, name = spec.strip().partition(":")
    if not colon:
        raise InputError(_unknown(spec))
    if not name:
        raise InputError(f"model {spec!r} names no model after {prefix!r}: write {prefix}:NAME")
    factory = _providers.get(prefix)
    if factory is None:
        endpoint = find_endpoint(prefix)
        if endpoint is not None:
            return _at_endpoint(endpoint, name)
        factory = _from_entry_point(prefix)
    if factory is None:
        raise InputError(_unknown(spec))
    return _built(prefix, factory, name)


def _built(prefix: str, factory: ProviderFactory, name: str, **options: Any) -> ModelProvider:
    try:
        return factory(name, **options)
    except RatchetError:
        raise
    except Exception as error:  # a third-party factory's failure: one line that names it
        raise InputError(
            f"provider {prefix!r} could not build model {name!r}: "
            f"{type(error).__name__}: {' '.join(str(error).split())}"
        ) from None


def _at_endpoint(endpoint: Endpoint, name: str) -> ModelProvider:
    factory = _providers.get(endpoint.provider) or _from_entry_point(endpoint.provider)
    if factory is None:
        raise InputError(
            f"endpoint {endpoint.name!r} ({endpoint.source}) names provider {endpoint.provider!r}, "
            f"which is unknown: {_known()}"
        )
    options: dict[str, Any] = {}
    if endpoint.base_url is not None:
        options["base_url"] = endpoint.base_url
    api_key = endpoint.api_key()
    if api_key is not None:
        options["api_key"] = api_key
    if endpoint.timeout is not None:
        options["timeout"] = endpoint.timeout
    missing = [option for option in options if not _takes(factory, option)]
    if missing:
        raise InputError(
            f"endpoint {endpoint.name!r} ({endpoint.source}): provider {endpoint.provider!r} "
            f"takes no {missing[0]}"
        )
    provider = _built(endpoint.provider, factory, name, **options)
    # The provider names itself by the endpoint, as the task records it.
    with contextlib.suppress(AttributeError):
        provider.name = f"{endpoint.name}:{name}"
    if endpoint.priced_as is not None:  # its calls are priced as that model (ratchet.pricing.priced_model)
        with contextlib.suppress(AttributeError):
            provider.priced_as = endpoint.priced_as  # type: ignore[attr-defined]
    return provider


def _takes(factory: ProviderFactory, option: str) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return True  # no signature to read (a builtin): let the call say
    return any(p.name == option or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _from_entry_point(prefix: str) -> ProviderFactory | None:
    """The factory an installed distribution declares for ``prefix``, loaded now (and kept)."""
    global _pending
    if _pending is None:
        _pending = {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}
    point = _pending.pop(prefix, None)
    if point is None:
        return None
    try:
        factory: ProviderFactory = point.load()
    except Exception as error:  # any failure of third-party code: name the entry point
        _pending[prefix] = point  # a fixed install may load it next time
        raise InputError(
            f"the {ENTRY_POINT_GROUP} entry point {prefix!r} ({point.value}) failed to load: "
            f"{type(error).__name__}: {' '.join(str(error).split())}"
        ) from None
    if not callable(factory):
        raise InputError(
            f"the {ENTRY_POINT_GROUP} entry point {prefix!r} ({point.value}) is not a callable factory"
        )
    register_provider(prefix, factory)
    return factory


def is_model_prefix(prefix: str) -> bool:
    """Whether `prefix` starts model strings: a provider (built in or installed), or an endpoint."""
    global _pending
    if prefix in _providers:
        return True
    if _pending is None:
        _pending = {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}
    return prefix in _pending or find_endpoint(prefix) is not None


def _known() -> str:
    names = set(_providers)
    if _pending is not None:
        names.update(_pending)
    return ", ".join(sorted(names))


def _unknown(spec: str) -> str:
    return (
        f"unknown model {spec!r}: write provider:name with a provider among {_known()}, "
        "or an endpoint of ratchet.toml (e.g. openai:gpt-4o-mini or scripted:script.json)"
    )

"""Model providers, chosen by a ``provider:name`` string (docs/providers.md)."""

from __future__ import annotations

from collections.abc import Callable

from ratchet.errors import InputError

from .anthropic import AnthropicModel
from .base import (
    MalformedAnswer,
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    Purpose,
    ToolCall,
    Usage,
    is_retryable_status,
)
from .openai_compat import OpenAIModel
from .scripted import ScriptedModel

__all__ = [
    "MalformedAnswer",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "OutputSchema",
    "Purpose",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "is_retryable_status",
    "resolve_model",
]


# Each provider's factory takes the part after "provider:".
_PROVIDERS: dict[str, Callable[[str], ModelProvider]] = {
    "scripted": ScriptedModel,
    "openai": OpenAIModel,
    "ollama": OpenAIModel.ollama,
    "anthropic": AnthropicModel,
}


def resolve_model(spec: str) -> ModelProvider:
    """The model a ``provider:name`` string names, e.g. ``scripted:demo/script.json``.

    Raises:
        InputError: the string names no known provider, or no model, or a
            provider that cannot be built (a missing script file).
    """
    known = ", ".join(sorted(_PROVIDERS))
    provider, colon, name = spec.strip().partition(":")
    factory = _PROVIDERS.get(provider)
    if not colon or factory is None:
        raise InputError(
            f"unknown model {spec!r}: write provider:name with a provider among {known} "
            "(e.g. openai:gpt-4o-mini or scripted:script.json)"
        )
    if not name:
        raise InputError(f"model {spec!r} names no model after {provider!r}: write {provider}:NAME")
    return factory(name)

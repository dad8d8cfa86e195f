"""Model providers, chosen by a ``provider:name`` string (docs/providers.md)."""

from __future__ import annotations

from .base import (
    MalformedAnswer,
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    Purpose,
    StreamingProvider,
    TextSink,
    ToolCall,
    UnsupportedSetting,
    Usage,
    is_retryable_status,
)
from .registry import ENTRY_POINT_GROUP, ProviderFactory, register_provider, resolve_model
from .scripted import ScriptedModel
from .settings import ModelSettings

__all__ = [
    "ENTRY_POINT_GROUP",
    "MalformedAnswer",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputSchema",
    "ProviderFactory",
    "Purpose",
    "ScriptedModel",
    "StreamingProvider",
    "TextSink",
    "ToolCall",
    "UnsupportedSetting",
    "Usage",
    "is_retryable_status",
    "register_provider",
    "resolve_model",
]

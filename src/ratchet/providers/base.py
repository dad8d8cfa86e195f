"""What the loop asks a model, what it gets back, and what every provider implements.

A provider turns a `ModelRequest` into a `ModelResponse` or raises `ModelError`.
It knows nothing of the journal, retries or budgets: those are middleware
(engine/calls/middleware.py) that wrap `ModelProvider.complete`.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field, JsonValue, SerializerFunctionWrapHandler, model_serializer

from ratchet.errors import InputError, MissingExtra, RatchetError
from ratchet.records import Record

from .settings import ModelSettings

__all__ = [
    "CHARS_PER_TOKEN",
    "MalformedAnswer",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "OutputSchema",
    "Purpose",
    "StreamingProvider",
    "TextSink",
    "ToolCall",
    "UnsupportedSetting",
    "Usage",
    "is_retryable_status",
    "require_library",
]


# What a token is taken to be when a server does not count them: about four characters of English
# (OpenAI's rule of thumb; the rate limiter charges a call before it runs by the same rule).
CHARS_PER_TOKEN = 4


class Purpose(StrEnum):
    """Why the loop asks the model; requests are counted per purpose."""

    PLAN = "plan"
    ACT = "act"
    VERIFY = "verify"
    REPLAN = "replan"
    SUMMARIZE = "summarize"


class ToolCall(Record):
    """One tool call the model asks for."""

    id: str
    name: str = Field(min_length=1)
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class Usage(Record):
    """What one model answer cost.

    ``cost`` is in US dollars: None until the engine prices the call
    (`ratchet.pricing`), and None after when no price is known. A provider
    that knows what its call cost may set it; the engine keeps it.

    ``estimated`` is True when the server reported no usage and the counts
    are Ratchet's estimate from the characters sent and received
    (`Usage.estimate`); it is written only when True, so a record of counts
    the server gave reads as it always did.
    """

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost: float | None = Field(default=None, ge=0.0)
    estimated: bool = False

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if not self.estimated:
            dumped.pop("estimated", None)
        return dumped

    @classmethod
    def estimate(cls, sent_chars: int, answered_chars: int) -> Usage:
        """Counts for a call whose server reported none: one token per `CHARS_PER_TOKEN` characters,
        rounded up, marked ``estimated``.

        Never a confident zero: a request always costs a token, so a price
        stays above 0 and ``max_cost`` keeps counting.
        """
        return cls(
            prompt_tokens=max(1, -(-sent_chars // CHARS_PER_TOKEN)),
            completion_tokens=-(-answered_chars // CHARS_PER_TOKEN),
            estimated=True,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class OutputSchema(Record):
    """The shape a model's JSON answer must have: a name and a JSON schema.

    Providers that can constrain the answer to it do (structured output:
    OpenAI's ``response_format`` json_schema, Anthropic's forced tool use);
    the others ask for it in the prompt (docs/providers.md).
    """

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    json_schema: dict[str, JsonValue]

    @classmethod
    def of(cls, model: type[BaseModel], name: str | None = None) -> OutputSchema:
        """The schema of a pydantic model, named after it unless `name` is given."""
        raw = name or model.__name__
        cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64] or "answer"
        schema: dict[str, Any] = model.model_json_schema()
        return cls(name=cleaned, json_schema=schema)


class ModelRequest(Record):
    """One request to a model: OpenAI-style messages and tool schemas.

    ``json_output`` asks for one JSON object; ``output_schema`` asks for one
    that fits a schema (and implies ``json_output``). ``settings`` says how
    the model answers (temperature, ...; None: the provider's defaults); an
    agent's requests carry its own (`AgentSpec.model_settings`).
    """

    purpose: Purpose
    messages: list[dict[str, JsonValue]] = Field(default_factory=list)
    tools: list[dict[str, JsonValue]] = Field(default_factory=list)
    json_output: bool = False
    output_schema: OutputSchema | None = None
    settings: ModelSettings | None = None

    @property
    def wants_json(self) -> bool:
        """Whether the answer must be one JSON object."""
        return self.json_output or self.output_schema is not None


class ModelResponse(Record):
    """A model's answer: text or a JSON value, and/or tool calls.

    ``ordinal`` is the request's index within its purpose, when the provider
    knows it (the scripted model always sets it). ``provider`` and ``model``
    say who answered, for pricing the call: the provider's protocol prefix
    (``openai``, ``anthropic``, ``litellm``; a named endpoint gives its
    provider's) and the model as the server named it in its answer (else as
    it was asked for); None when the provider does not say (the scripted model).
    ``response_id`` and ``finish_reason`` are what the server said of its
    answer (``chatcmpl-...``, ``stop``, ``tool_calls``, ``length``; Anthropic's
    ``msg_...``, ``end_turn``, ``tool_use``), for the answer's span
    (docs/observability.md); None when it did not say, and in answers
    recorded before they were kept.
    """

    content: JsonValue = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    ordinal: int | None = Field(default=None, ge=0)
    provider: str | None = None
    model: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None


@runtime_checkable
class ModelProvider(Protocol):
    """A model the loop can call."""

    name: str

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        """Answer `request`.

        Args:
            request: what to ask.
            ordinal: the index of this request among all requests of its
                purpose for the task, retries included, counting from 0. The
                engine computes it from the journal; a replayed request never
                reaches the provider. Only the scripted model uses it.

        Raises:
            ModelError: the provider failed; ``retryable`` says whether to try again.
        """
        ...


TextSink = Callable[[str], Awaitable[None]]
"""Where a streaming provider sends each piece of answer text as it arrives."""


@runtime_checkable
class StreamingProvider(ModelProvider, Protocol):
    """A model that can hand over its answer's text as it is written.

    The engine streams a model call through `complete_streaming` when the
    provider has it (and the task streams); the answer it returns is the
    same whole `ModelResponse` `complete` returns, and that is what the
    journal records, once. The pieces are for readers only.
    """

    async def complete_streaming(
        self, request: ModelRequest, *, ordinal: int, on_text: TextSink
    ) -> ModelResponse:
        """Answer `request` as `complete` does, awaiting `on_text(piece)` for each piece of text in order.

        The pieces joined are the answer's text content (none when it
        answers only with tool calls or JSON it does not stream).

        Raises:
            ModelError: as `complete`; a stream cut off midway is retryable.
        """
        ...


def require_library(module: str, *, feature: str, library: str, extra: str) -> None:
    """Check that `module` can be imported, without importing it (an SDK takes most of a second).

    Args:
        module: the import name (``anthropic``).
        feature, library, extra: for the message (see `MissingExtra`).

    Raises:
        MissingExtra: it cannot be imported; the message names the extra that installs it.
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a package that fails to load, or a module blocked in sys.modules
        found = False
    if not found:
        raise MissingExtra(feature, library, extra)


def is_retryable_status(status: int | None) -> bool:
    """Whether a provider failure with this HTTP status is worth another attempt.

    ``None`` means no HTTP answer came at all (a timeout, a dropped
    connection): retryable. So are 408 (request timeout), 429 (rate limit) and
    every 5xx. Any other 4xx (bad request, auth, not found, context too long)
    fails the same way every time.
    """
    return status is None or status in (408, 429) or status >= 500


class ModelError(RatchetError):
    """The model provider failed to answer.

    Attributes:
        status: the HTTP status the provider answered, or None if none came.
        retry_after: seconds the provider asked to wait before the next try.
        retryable: whether another attempt may succeed.
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.retryable = retryable

    @classmethod
    def from_status(
        cls, status: int | None, message: str | None = None, retry_after: float | None = None
    ) -> Self:
        """A `ModelError` for a failed HTTP exchange, retryable per `is_retryable_status`.

        Args:
            status: the HTTP status, or None for a timeout or connection failure.
            message: what went wrong; defaults to naming the status.
            retry_after: the provider's Retry-After, in seconds.
        """
        if message is None:
            message = (
                f"the model provider answered HTTP {status}"
                if status is not None
                else "the model provider did not answer (timeout or connection failure)"
            )
        return cls(
            message,
            status=status,
            retry_after=retry_after,
            retryable=is_retryable_status(status),
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, status={self.status!r}, "
            f"retry_after={self.retry_after!r}, retryable={self.retryable!r})"
        )


class MalformedAnswer(ModelError):
    """The model answered something unusable: not the JSON asked for, or malformed tool arguments.

    Never retryable as such (asking the same way likely gets the same
    answer); a caller repairs instead: it tells the model what was wrong and
    asks again (``ctx.call_model(..., schema=)`` does).
    """

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, retryable=False)


class UnsupportedSetting(ModelError, InputError):
    """A model setting the provider's API has no way to send (a seed to Anthropic's, ...).

    Raised before any network call: by a provider building a request (a
    `ModelError` no retry can cure), or by ``ratchet run``/``submit``
    checking their options (an `InputError`: one line, exit 2).
    """

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, retryable=False)

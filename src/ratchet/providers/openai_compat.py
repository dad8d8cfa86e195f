"""Any server that speaks OpenAI's chat-completions API (DESIGN section 8).

``openai:MODEL`` talks to OpenAI, or to whatever ``OPENAI_BASE_URL`` names: vLLM,
the llama.cpp server, LM Studio. ``ollama:MODEL`` is the same class pointed at
Ollama's OpenAI-compatible API. The official ``openai`` SDK does the HTTP; this
module turns a `ModelRequest` into its arguments, its answer into a
`ModelResponse`, and its exceptions into `ModelError`.

The SDK is imported on first use, not with this module: it takes most of a
second to import, and ``import ratchet`` should not pay for a provider it may
never call. The SDK's own retries are off: Ratchet's retry middleware retries,
durably, and reads ``ModelError.retryable`` and ``retry_after`` to do so.

The helpers below `OpenAIModel` (messages, JSON answers, HTTP errors) are
shared with the Anthropic provider.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from .base import ModelError, ModelRequest, ModelResponse, ToolCall, Usage

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

__all__ = ["OpenAIModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
# The SDK refuses to start without a key; local servers ignore whatever is sent.
PLACEHOLDER_API_KEY = "no-key"

JSON_INSTRUCTION = "Answer with one JSON object only: no text before or after it, no code fences."


class OpenAIModel:
    """A `ModelProvider` for a server speaking OpenAI's chat-completions API.

    Constructing one does no I/O; the SDK client is built on the first request.

    Args:
        model: the model name the server knows (``gpt-4o-mini``, ``llama3.1``).
        base_url: the API root, ending in ``/v1``; by default ``OPENAI_BASE_URL``,
            else OpenAI's.
        api_key: by default ``OPENAI_API_KEY``; without either, a placeholder
            key is sent, which local servers ignore.
        timeout: seconds one HTTP exchange may take; a timeout is a retryable
            failure.
        provider: the prefix of `name`: ``openai``, or ``ollama`` for `ollama`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        provider: str = "openai",
    ) -> None:
        self.model = model
        self.name = f"{provider}:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        self.timeout = timeout
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        # Cleared when the server refuses ``response_format`` (LM Studio does).
        self._json_mode = True

    @classmethod
    def ollama(cls, model: str) -> OpenAIModel:
        """``ollama:MODEL``: Ollama's OpenAI-compatible API.

        At ``OLLAMA_BASE_URL`` if set (a URL ending in ``/v1``), else
        ``http://localhost:11434/v1``. Ollama needs no key, so none of the
        user's is sent to it.
        """
        base_url = os.environ.get("OLLAMA_BASE_URL") or OLLAMA_BASE_URL
        return cls(model, base_url=base_url, api_key="ollama", provider="ollama")

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.base_url!r})"

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        """Ask the server's ``/chat/completions`` for one answer to `request`.

        Raises:
            ModelError: the server failed (``retryable`` per the HTTP status, or
                True when no answer came), or answered something unusable
                (malformed JSON or tool arguments: not retryable).
        """
        import openai

        arguments = self._arguments(request)
        try:
            completion = await self._create(arguments)
        except openai.APIStatusError as exc:
            raise http_error(
                self.name, exc.status_code, exc.body, exc.message, exc.response.headers
            ) from exc
        except openai.APITimeoutError as exc:
            raise ModelError.from_status(
                None, f"{self.name}: no answer from {self.base_url} within {self.timeout:g} s"
            ) from exc
        except openai.APIConnectionError as exc:
            raise connection_error(self.name, self.base_url, exc) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"{self.name}: {one_line(str(exc))}", retryable=False) from exc
        return self._response(request, completion, ordinal)

    async def _create(self, arguments: dict[str, Any]) -> ChatCompletion:
        import openai

        client = self._sdk_client()
        try:
            completion: ChatCompletion = await client.chat.completions.create(**arguments)
            return completion
        except openai.BadRequestError as exc:
            refused = "response_format" in error_detail(exc.body, exc.message)
            if "response_format" not in arguments or not refused:
                raise
        # The server has no JSON mode; the instruction in the prompt still asks for JSON.
        self._json_mode = False
        arguments = {key: value for key, value in arguments.items() if key != "response_format"}
        completion = await client.chat.completions.create(**arguments)
        return completion

    def _sdk_client(self) -> openai.AsyncOpenAI:
        # An HTTP client's pooled connections belong to the event loop that
        # opened them; a second asyncio.run (the sync facade, tests) needs its own.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self.api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0
            )
            self._client_loop = loop
        return self._client

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        messages = parse_messages(self.name, request)
        if request.json_output:
            messages = with_json_instruction(messages)
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [_wire_message(message) for message in messages],
        }
        if request.tools:
            arguments["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.parameters,
                    },
                }
                for spec in parse_tools(self.name, request)
            ]
        if request.json_output and self._json_mode:
            arguments["response_format"] = {"type": "json_object"}
        return arguments

    def _response(
        self, request: ModelRequest, completion: ChatCompletion, ordinal: int
    ) -> ModelResponse:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ModelError(f"{self.name} answered with no choices", retryable=False)
        choice = choices[0]
        message: ChatCompletionMessage = choice.message
        truncated = choice.finish_reason == "length"
        calls = [
            self._tool_call(index, call) for index, call in enumerate(message.tool_calls or [])
        ]
        content: JsonValue = message.content
        if request.json_output and (content or not calls):
            content = decode_json_answer(self.name, request, message.content, truncated=truncated)
        usage = getattr(completion, "usage", None)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", None) or 0,
                completion_tokens=getattr(usage, "completion_tokens", None) or 0,
            ),
            ordinal=ordinal,
        )

    def _tool_call(self, index: int, call: Any) -> ToolCall:
        function = getattr(call, "function", None)
        if function is None:
            raise ModelError(
                f"{self.name} asked for a {getattr(call, 'type', 'non-function')} tool call; "
                "Ratchet offers function tools only",
                retryable=False,
            )
        arguments = decode_arguments(self.name, function.name, function.arguments)
        return make_tool_call(self.name, call.id or f"call_{index}", function.name, arguments)


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message_text(message.content)}
    if message.name and message.role != "tool":
        wire["name"] = message.name
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    if message.tool_calls:
        wire["content"] = wire["content"] or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return wire


# --------------------------------------------------------------------------- requests


class ChatMessage(BaseModel):
    """One message of a `ModelRequest`, in OpenAI's chat shape.

    ``tool_calls`` may come in OpenAI's wire shape (``{"id", "type",
    "function": {"name", "arguments": "<JSON text>"}}``) or as dumped
    `ToolCall` records (``{"id", "name", "arguments": {...}}``).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    role: Literal["system", "user", "assistant", "tool"]
    content: JsonValue = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _flatten_wire_calls(cls, calls: Any) -> Any:
        if not isinstance(calls, list):
            return calls
        return [_flat_call(call) for call in calls]

    @model_validator(mode="after")
    def _tool_answers_name_their_call(self) -> ChatMessage:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        return self


def _flat_call(call: Any) -> Any:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return call
    function = call["function"]
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        arguments = json.loads(arguments) if arguments.strip() else {}
    return {"id": call.get("id"), "name": function.get("name"), "arguments": arguments or {}}


def _no_parameters() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class ToolSpec(BaseModel):
    """A tool as `ratchet.Tool.schema` describes it to a model."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_no_parameters)

    @field_validator("description", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


def parse_messages(model: str, request: ModelRequest) -> list[ChatMessage]:
    """The request's messages as records.

    Raises:
        ModelError: a message is not a chat message (not retryable: the
            request is wrong, not the provider).
    """
    messages = []
    for index, raw in enumerate(request.messages):
        try:
            messages.append(ChatMessage.model_validate(raw))
        except (ValidationError, ValueError) as exc:
            raise ModelError(
                f"{model}: message {index} of the {request.purpose} request is not a chat "
                f"message: {_first_problem(exc)}",
                retryable=False,
            ) from exc
    return messages


def parse_tools(model: str, request: ModelRequest) -> list[ToolSpec]:
    """The request's tool schemas as records.

    Raises:
        ModelError: a tool schema has no name (not retryable).
    """
    try:
        return [ToolSpec.model_validate(raw) for raw in request.tools]
    except ValidationError as exc:
        raise ModelError(
            f"{model}: a tool of the {request.purpose} request is not a tool schema: "
            f"{_first_problem(exc)}",
            retryable=False,
        ) from exc


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        return f"{where}: {message}" if where else message
    return one_line(str(exc))


def message_text(content: JsonValue) -> str:
    """A message's content as the text a model reads: strings as they are, other values as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def with_json_instruction(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages with `JSON_INSTRUCTION` added to the first system message (or a new one)."""
    for index, message in enumerate(messages):
        if message.role == "system":
            text = f"{message_text(message.content)}\n\n{JSON_INSTRUCTION}".lstrip()
            return [
                *messages[:index],
                message.model_copy(update={"content": text}),
                *messages[index + 1 :],
            ]
    return [ChatMessage(role="system", content=JSON_INSTRUCTION), *messages]


# --------------------------------------------------------------------------- answers


_CODE_FENCE = re.compile(r"^```[\w-]*[ \t]*\n(.*?)\n?```$", re.DOTALL)


def decode_json_answer(
    model: str, request: ModelRequest, text: str | None, *, truncated: bool = False
) -> dict[str, JsonValue]:
    """The JSON object a ``json_output`` answer holds (a surrounding code fence is allowed).

    Args:
        model: the provider's name, for the message.
        request: the request answered.
        text: the answer's text.
        truncated: the answer stopped at the token limit.

    Raises:
        ModelError: the answer is not one JSON object. Not retryable: asking
            again the same way likely gets the same answer; the caller repairs
            (DESIGN section 6: feed the error back and ask again).
    """
    body = (text or "").strip()
    fenced = _CODE_FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    else:
        if isinstance(value, dict):
            return value
        problem = f"a JSON {type(value).__name__} where an object was asked for"
    cut = "; the answer was cut off at the token limit" if truncated else ""
    raise ModelError(
        f"{model} returned malformed JSON for a {request.purpose} request "
        f"({problem}{cut}): {_excerpt(text)}",
        retryable=False,
    )


def decode_arguments(model: str, tool: str, arguments: Any) -> dict[str, JsonValue]:
    """A tool call's arguments, from JSON text (OpenAI) or an object (Anthropic).

    Raises:
        ModelError: the arguments are not a JSON object (not retryable).
    """
    value = arguments
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ModelError(
                f"{model} returned malformed JSON arguments for tool {tool!r} "
                f"({exc.msg} at line {exc.lineno}, column {exc.colno}): {_excerpt(arguments)}",
                retryable=False,
            ) from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ModelError(
            f"{model} returned arguments for tool {tool!r} that are not a JSON object: "
            f"{_excerpt(json.dumps(value))}",
            retryable=False,
        )
    return value


def make_tool_call(
    model: str, call_id: str, name: str, arguments: dict[str, JsonValue]
) -> ToolCall:
    """A `ToolCall`, or a non-retryable `ModelError` if the model's call is unusable."""
    try:
        return ToolCall(id=call_id, name=name, arguments=arguments)
    except ValidationError as exc:
        raise ModelError(
            f"{model} returned an unusable tool call: {_first_problem(exc)}", retryable=False
        ) from exc


def _excerpt(text: str | None, limit: int = 200) -> str:
    text = text or ""
    return repr(text if len(text) <= limit else text[:limit] + "...")


# --------------------------------------------------------------------------- errors


_CONTEXT_OVERFLOW = re.compile(
    r"context[_ ]length|context window|context size|maximum context|too many tokens|"
    r"prompt is too long",
    re.IGNORECASE,
)


def http_error(
    model: str, status: int, body: object, fallback: str, headers: Mapping[str, str]
) -> ModelError:
    """The `ModelError` for an HTTP error answer, retryable per its status.

    A prompt longer than the model's context is never retryable, whatever the
    status a server picks for it (a rate limit, 429, may mention tokens too).
    """
    detail = error_detail(body, fallback)
    code = body.get("code") if isinstance(body, Mapping) else None
    overflow = code == "context_length_exceeded" or _CONTEXT_OVERFLOW.search(detail)
    if overflow and status not in (408, 429):
        return ModelError(
            f"{model}: HTTP {status}: the prompt does not fit the model's context: {detail}",
            status=status,
            retryable=False,
        )
    return ModelError.from_status(
        status, f"{model}: HTTP {status}: {detail}", retry_after_seconds(headers)
    )


def connection_error(model: str, base_url: str, exc: BaseException) -> ModelError:
    """The retryable `ModelError` for a request that got no HTTP answer."""
    cause = exc.__cause__ or exc.__context__
    reason = one_line(str(cause)) if cause is not None and str(cause) else one_line(str(exc))
    return ModelError.from_status(None, f"{model}: cannot reach {base_url}: {reason}")


def error_detail(body: object, fallback: str) -> str:
    """What an error answer says went wrong, in one line.

    Both SDKs hand over either the whole JSON body or its ``error`` member;
    both APIs put the text in ``error.message``.
    """
    inner = body.get("error", body) if isinstance(body, Mapping) else body
    if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
        text = inner["message"]
    elif isinstance(inner, str) and inner.strip():
        text = inner
    else:
        text = fallback
    return one_line(text)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a provider asked for: ``retry-after-ms``, or ``retry-after`` in seconds or as a date."""
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        return max(0.0, seconds) if math.isfinite(seconds) else None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

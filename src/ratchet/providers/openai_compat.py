"""Any server that speaks OpenAI's chat-completions API.

``openai:MODEL`` talks to OpenAI, or to whatever ``OPENAI_BASE_URL`` names: vLLM,
the llama.cpp server, LM Studio. ``ollama:MODEL`` is the same class pointed at
Ollama's OpenAI-compatible API. The official ``openai`` SDK does the HTTP; this
module turns a `ModelRequest` into its arguments, its answer into a
`ModelResponse`, and its exceptions into `ModelError`.

The SDK is imported on first use, not with this module: it takes most of a
second to import, and ``import ratchet`` should not pay for a provider it may
never call. The SDK's own retries are off: Ratchet's retry middleware retries,
durably, and reads ``ModelError.retryable`` and ``retry_after`` to do so.

The request records, the answer decoding (`_wire`) and the HTTP errors
(`_http`) are shared with the Anthropic provider.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import TYPE_CHECKING, Any, cast

from pydantic import JsonValue

from ._http import connection_error, http_error, one_line
from ._structured import (
    OPENAI_WAYS,
    EndpointFormats,
    endpoint_formats,
    openai_response_format,
    refusal_names,
    schema_instruction,
)
from ._wire import (
    ChatMessage,
    decode_arguments,
    decode_json_answer,
    make_tool_call,
    message_text,
    parse_messages,
    parse_tools,
    with_json_instruction,
)
from .base import MalformedAnswer, ModelError, ModelRequest, ModelResponse, ToolCall, Usage, require_library

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

__all__ = ["OpenAIModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
# The SDK refuses to start without a key; local servers ignore whatever is sent.
PLACEHOLDER_API_KEY = "no-key"


class OpenAIModel:
    """A `ModelProvider` for a server speaking OpenAI's chat-completions API.

    Constructing one does no I/O; the SDK client is built on the first request.
    Without the ``openai`` SDK installed it raises `MissingExtra`, which names
    the ``[openai]`` extra.

    Args:
        model: the model name the server knows (``gpt-4o-mini``, ``llama3.1``).
        base_url: the API root, ending in ``/v1``; by default ``OPENAI_BASE_URL``,
            else OpenAI's.
        api_key: by default ``OPENAI_API_KEY``; without either, a placeholder
            key is sent, which local servers ignore.
        timeout: seconds one HTTP exchange may take; a timeout is a retryable
            failure.
        provider: the prefix of `name`: ``openai``, or ``ollama`` for `ollama`.
        formats: where the refused ways of asking for JSON are remembered; by
            default one record shared by the whole process.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        provider: str = "openai",
        formats: EndpointFormats | None = None,
    ) -> None:
        require_library(
            "openai", feature=f"the {provider}: provider", library="the OpenAI SDK", extra="openai"
        )
        self.model = model
        self.name = f"{provider}:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        self.timeout = timeout
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        # What each server refused of the ways to ask for JSON: shared by the process.
        self._formats = formats if formats is not None else endpoint_formats

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

        A request for JSON uses the best ``response_format`` the server has
        not refused (see `ratchet.providers._structured`); a refusal moves to
        the next one, within this call.

        Raises:
            ModelError: the server failed (``retryable`` per the HTTP status, or
                True when no answer came), or answered something unusable
                (`MalformedAnswer`: malformed JSON or tool arguments, not retryable).
        """
        import openai

        ways = (
            self._formats.ways(self._endpoint, OPENAI_WAYS, request.output_schema is not None)
            if request.wants_json
            else ["prompt"]
        )
        for way in ways:
            arguments = self._arguments(request, way)
            try:
                completion = await self._create(arguments)
            except openai.APIStatusError as exc:
                if way != ways[-1] and refusal_names(
                    exc.status_code, exc.body, exc.message, ("response_format",)
                ):
                    self._formats.refuse(self._endpoint, way)
                    continue
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
        raise AssertionError("unreachable: the last way (the prompt) is never refused")

    @property
    def _endpoint(self) -> tuple[str, str]:
        return (self.base_url, self.model)

    async def _create(self, arguments: dict[str, Any]) -> ChatCompletion:
        # The SDK's overloads (streaming or not) can't be told apart from **arguments.
        client = self._sdk_client()
        return cast("ChatCompletion", await client.chat.completions.create(**arguments))

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

    def _arguments(self, request: ModelRequest, way: str) -> dict[str, Any]:
        messages = parse_messages(self.name, request)
        response_format = openai_response_format(way, request.output_schema)
        if request.wants_json:
            # The schema goes in the prompt when the server is not given it.
            told = request.output_schema is not None and way not in ("json_schema", "json_object_schema")
            extra = schema_instruction(request.output_schema) if told and request.output_schema else ""
            messages = with_json_instruction(messages, extra)
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
        if response_format is not None:
            arguments["response_format"] = response_format
        return arguments

    def _response(self, request: ModelRequest, completion: ChatCompletion, ordinal: int) -> ModelResponse:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ModelError(f"{self.name} answered with no choices", retryable=False)
        choice = choices[0]
        message: ChatCompletionMessage = choice.message
        truncated = choice.finish_reason == "length"
        calls = [self._tool_call(index, call) for index, call in enumerate(message.tool_calls or [])]
        content: JsonValue = message.content
        if request.wants_json and (content or not calls):
            refusal = getattr(message, "refusal", None)
            if not content and refusal:
                raise MalformedAnswer(f"{self.name} refused to answer: {one_line(str(refusal))}")
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

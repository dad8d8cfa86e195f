"""Anthropic's Messages API.

``anthropic:MODEL`` (e.g. ``anthropic:claude-sonnet-4-5``). The official
``anthropic`` SDK does the HTTP, imported on first use and with its own
retries off, as for `OpenAIModel`. Ratchet's requests are OpenAI-shaped, so
this module converts them:

- system messages become the ``system`` parameter;
- an assistant message's tool calls become ``tool_use`` blocks;
- tool messages become ``tool_result`` blocks of a user message;
- consecutive messages of one role are merged into one (the API alternates roles);
- tool schemas become ``{"name", "description", "input_schema"}``.

The Messages API has no JSON mode. A request with an output schema (and no
tools of its own) forces a tool whose input schema is that schema
(``tool_choice``), and the tool's input is the answer's content; any other
``json_output`` request asks for one JSON object in the system prompt, and
the answer is parsed as for OpenAI.

Streamed (`AnthropicModel.complete_streaming`), the SDK adds the events up
into the same `Message`, which is read the same way.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from ._http import connection_error, error_detail, http_error, one_line, stream_cut
from ._structured import (
    ANTHROPIC_REFUSABLE,
    ANTHROPIC_WAYS,
    EndpointFormats,
    endpoint_formats,
    refusal_names,
    schema_instruction,
)
from ._wire import (
    JSON_INSTRUCTION,
    ChatMessage,
    decode_arguments,
    decode_json_answer,
    make_tool_call,
    message_text,
    parse_messages,
    parse_tools,
)
from .base import (
    MalformedAnswer,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextSink,
    ToolCall,
    UnsupportedSetting,
    Usage,
    require_library,
)
from .settings import ModelSettings

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import Message

__all__ = ["AnthropicModel"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANSWER_TOOL_DESCRIPTION = "Give your answer: its input is the whole answer, in the shape asked for."


class AnthropicModel:
    """A `ModelProvider` for Anthropic's Messages API.

    Constructing one does no I/O; the SDK client is built on the first request.
    Without the ``anthropic`` SDK installed it raises `MissingExtra`, which names
    the ``[anthropic]`` extra.

    Args:
        model: the model name (``claude-sonnet-4-5``).
        api_key: by default ``ANTHROPIC_API_KEY``; without either, the SDK's
            other credential sources (``ANTHROPIC_AUTH_TOKEN``, profiles) apply.
        base_url: the server root (no ``/v1``); by default
            ``ANTHROPIC_BASE_URL``, else Anthropic's.
        timeout: seconds one HTTP exchange may take; a timeout is a retryable
            failure.
        max_tokens: the most tokens one answer may take (the API requires a
            limit), unless a request's settings give ``max_output_tokens``.
        formats: where a refused forced tool is remembered; by default one
            record shared by the whole process.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60,
        max_tokens: int = 4096,
        formats: EndpointFormats | None = None,
    ) -> None:
        require_library(
            "anthropic", feature="the anthropic: provider", library="the Anthropic SDK", extra="anthropic"
        )
        self.model = model
        self.name = f"anthropic:{model}"
        self.provider = "anthropic"  # the protocol, whatever endpoint names the model
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._formats = formats if formats is not None else endpoint_formats

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, base_url={self.base_url!r})"

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        """Ask ``/v1/messages`` for one answer to `request`.

        A request with an output schema and no tools of its own forces a
        tool whose input is the schema; a server that refuses that is asked
        in the prompt instead (and remembered, see `ratchet.providers._structured`).

        Raises:
            UnsupportedSetting: a model setting the API cannot take (see
                `check_settings`), before any request.
            ModelError: the API failed (``retryable`` per the HTTP status, 529
                "overloaded" included, or True when no answer came), or
                answered something unusable (`MalformedAnswer`: not retryable).
        """
        return await self._answer(request, ordinal, None)

    async def complete_streaming(
        self, request: ModelRequest, *, ordinal: int, on_text: TextSink
    ) -> ModelResponse:
        """Answer as `complete` does, streamed (``messages.stream``), handing `on_text` each text delta.

        The SDK adds the events up (text deltas, a tool's ``input_json``
        deltas, the usage of ``message_start`` and ``message_delta``) into the
        `Message` `complete` would get for the same answer, and it is read the
        same way. A request for JSON streams no text: its content is the value.

        Raises:
            ModelError: as `complete`; a stream cut off midway (the connection
                closed or stalled, an ``error`` event, no ``message_stop``)
                is retryable, with no status.
        """
        return await self._answer(request, ordinal, on_text)

    async def _answer(self, request: ModelRequest, ordinal: int, on_text: TextSink | None) -> ModelResponse:
        """One answer, streamed when `on_text` is given: the ways of asking for JSON are tried in turn."""
        import anthropic

        self.check_settings(request.settings)
        forcing = request.output_schema is not None and not request.tools
        ways = self._formats.ways(self._endpoint, ANTHROPIC_WAYS, forcing)
        for way in ways:
            arguments = self._arguments(request, way)
            try:
                if on_text is None:
                    message = await self._sdk_client().messages.create(**arguments)
                else:
                    # JSON is not text to read as it comes: its content is the value, whole.
                    message = await self._stream(arguments, None if request.wants_json else on_text)
            except anthropic.APIStatusError as exc:
                if way != ways[-1] and refusal_names(exc.body, exc.message, ANTHROPIC_REFUSABLE):
                    self._formats.refuse(self._endpoint, way)
                    continue
                raise http_error(
                    self.name, exc.status_code, exc.body, exc.message, exc.response.headers
                ) from exc
            except anthropic.APITimeoutError as exc:
                raise ModelError.from_status(
                    None, f"{self.name}: no answer from {self.base_url} within {self.timeout:g} s"
                ) from exc
            except anthropic.APIConnectionError as exc:
                raise connection_error(self.name, self.base_url, exc) from exc
            except anthropic.AnthropicError as exc:
                raise ModelError(f"{self.name}: {one_line(str(exc))}", retryable=False) from exc
            return self._response(request, message, ordinal, forced=way == "forced_tool")
        raise AssertionError("unreachable: the last way (the prompt) is never refused")

    async def _stream(self, arguments: dict[str, Any], on_text: TextSink | None) -> Message:
        """The streamed answer, added up by the SDK; its text handed on as it comes.

        An error answer before the stream raises as from ``messages.create``;
        anything that fails once the stream is open is a cut.
        """
        async with self._sdk_client().messages.stream(**arguments) as stream:
            events = aiter(stream)
            started = False
            while True:
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                except ValueError as exc:  # a tool's input that is not JSON, as the SDK adds it up
                    raise MalformedAnswer(
                        f"{self.name} returned malformed JSON for a tool's input: {one_line(str(exc))}"
                    ) from exc
                except Exception as exc:  # the SDK's error event, or its HTTP library's broken connection
                    raise stream_cut(self.name, self.base_url, _cut_detail(exc, self.timeout)) from exc
                started = started or event.type == "message_start"
                if on_text is not None and event.type == "text" and event.text:
                    await on_text(event.text)
            message = await stream.get_final_message() if started else None
        if message is None or message.stop_reason is None:
            text = "".join(block.text for block in message.content if block.type == "text") if message else ""
            raise stream_cut(self.name, self.base_url, f"it ended after {len(text)} characters of text")
        return message

    def check_settings(self, settings: ModelSettings | None) -> None:
        """Refuse a model setting the Messages API has no way to send.

        It takes ``max_tokens`` and a reasoning effort (``output_config.effort``).
        It has no seed, and no temperature: API version 2026-10-21, which the
        SDK sends from its version 2, refuses every sampling parameter (the
        SDK has none), for every model.

        Raises:
            UnsupportedSetting: one line naming the setting.
        """
        if settings is None:
            return
        if settings.seed is not None:
            raise UnsupportedSetting(f"{self.name} takes no seed: Anthropic's Messages API has none")
        if settings.temperature is not None:
            raise UnsupportedSetting(
                f"{self.name} takes no temperature: Anthropic's Messages API refuses sampling "
                "parameters since its version 2026-10-21"
            )

    @property
    def _endpoint(self) -> tuple[str, str]:
        return (self.base_url, self.model)

    def _sdk_client(self) -> anthropic.AsyncAnthropic:
        # As for OpenAIModel: one HTTP client per event loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            import anthropic

            client = anthropic.AsyncAnthropic(
                api_key=self.api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0
            )
            # Without credentials the SDK raises a bare TypeError at the request.
            if not (client.api_key or client.auth_token or getattr(client, "credentials", None)):
                raise ModelError(
                    f"{self.name}: no Anthropic credentials; set ANTHROPIC_API_KEY",
                    retryable=False,
                )
            self._client, self._client_loop = client, loop
        return self._client

    def _arguments(self, request: ModelRequest, way: str) -> dict[str, Any]:
        messages = parse_messages(self.name, request)
        system = [message_text(m.content) for m in messages if m.role == "system"]
        schema = request.output_schema
        if request.wants_json and way != "forced_tool":
            system.append(JSON_INSTRUCTION + (f" {schema_instruction(schema)}" if schema else ""))
        settings = request.settings or ModelSettings()
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": settings.max_output_tokens or self.max_tokens,
            "messages": _turns(m for m in messages if m.role != "system"),
        }
        if settings.reasoning_effort is not None:
            arguments["output_config"] = {"effort": settings.reasoning_effort}
        if any(system):
            arguments["system"] = "\n\n".join(text for text in system if text)
        if request.tools:
            arguments["tools"] = [
                {
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.parameters,
                }
                for spec in parse_tools(self.name, request)
            ]
        if way == "forced_tool" and schema is not None:
            # The answer is the input of a tool the model must call: the API holds it to the schema.
            arguments["tools"] = [
                {
                    "name": schema.name,
                    "description": ANSWER_TOOL_DESCRIPTION,
                    "input_schema": schema.json_schema,
                }
            ]
            arguments["tool_choice"] = {"type": "tool", "name": schema.name}
        return arguments

    def _response(
        self, request: ModelRequest, message: Message, ordinal: int, *, forced: bool
    ) -> ModelResponse:
        truncated = message.stop_reason == "max_tokens"
        # With a forced tool (way "forced_tool") the answer is that tool's input, not a tool call.
        answer_tool = request.output_schema.name if forced and request.output_schema else None
        texts: list[str] = []
        calls: list[ToolCall] = []
        answers: list[dict[str, JsonValue]] = []
        for block in message.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                arguments = decode_arguments(self.name, block.name, block.input)
                if block.name == answer_tool:
                    answers.append(arguments)
                else:
                    calls.append(make_tool_call(self.name, block.id, block.name, arguments))
        text = "".join(texts)
        content: JsonValue = text or None
        if answer_tool is not None:
            if not answers or truncated:
                why = "was cut off at the token limit" if truncated else "gave no answer through it"
                raise MalformedAnswer(
                    f"{self.name} was asked to answer a {request.purpose} request through the tool "
                    f"{answer_tool!r} but {why}"
                )
            content = answers[0]
        elif request.wants_json and (text or not calls):
            content = decode_json_answer(self.name, request, text, truncated=truncated)
        usage = message.usage
        prompt_tokens = (
            usage.input_tokens
            + (getattr(usage, "cache_creation_input_tokens", None) or 0)
            + (getattr(usage, "cache_read_input_tokens", None) or 0)
        )
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=usage.output_tokens),
            ordinal=ordinal,
            provider="anthropic",
            model=getattr(message, "model", None) or self.model,
            response_id=getattr(message, "id", None) or None,
            finish_reason=message.stop_reason or None,
        )


def _cut_detail(exc: Exception, timeout: float) -> str:
    """How a stream that failed midway failed, in a few words."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return error_detail(exc.body, exc.message)
    if "timeout" in type(exc).__name__.lower():
        return f"no event within {timeout:g} s"
    return one_line(str(exc)) or type(exc).__name__


def _turns(messages: Iterable[ChatMessage]) -> list[dict[str, Any]]:
    """Non-system chat messages as Anthropic turns: user and assistant, alternating."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    text = message_text(message.content)
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": text}]
    # The API refuses empty text blocks.
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks

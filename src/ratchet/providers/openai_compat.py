"""Any server that speaks OpenAI's chat-completions API.

``openai:MODEL`` talks to OpenAI, or to whatever ``OPENAI_BASE_URL`` names: vLLM,
the llama.cpp server, LM Studio. ``ollama:MODEL`` is the same class pointed at
Ollama's OpenAI-compatible API. The official ``openai`` SDK does the HTTP; this
module turns a `ModelRequest` into its arguments, its answer into a
`ModelResponse` (whole, or added up from its stream: `_chat_stream`), and its
exceptions into `ModelError`.

The SDK is imported on first use, not with this module: it takes most of a
second to import, and ``import ratchet`` should not pay for a provider it may
never call. The SDK's own retries are off: Ratchet's retry middleware retries,
durably, and reads ``ModelError.retryable`` and ``retry_after`` to do so.

The request records, the answer decoding (`_wire`) and the HTTP errors
(`_http`) are shared with the Anthropic provider.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ratchet.errors import InputError

from ._chat_shape import chat_message, chat_response, chat_settings, chat_tools
from ._chat_stream import ChatStream
from ._http import connection_error, error_detail, http_error, one_line, stream_cut
from ._structured import (
    OPENAI_REFUSABLE,
    OPENAI_WAYS,
    EndpointFormats,
    endpoint_formats,
    openai_response_format,
    refusal_names,
    schema_instruction,
)
from ._wire import parse_messages, with_json_instruction
from .base import ModelError, ModelRequest, ModelResponse, TextSink, require_library

if TYPE_CHECKING:
    import openai
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk

__all__ = ["OpenAIModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
# The SDK refuses to start without a key; local servers ignore whatever is sent.
PLACEHOLDER_API_KEY = "no-key"
# The two names of the longest answer: every compatible server's, and OpenAI's newer one.
MAX_TOKENS = "max_tokens"
MAX_COMPLETION_TOKENS = "max_completion_tokens"
# How a streamed answer asks for its usage (in a last chunk): many compatible servers refuse it.
STREAM_OPTIONS = "stream_options"


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
            key is sent, which local servers ignore (OpenAI's own API needs
            one: without it, `InputError` at once).
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
        self.provider = provider
        self.name = f"{provider}:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and urlsplit(self.base_url).hostname == urlsplit(OPENAI_BASE_URL).hostname:
            # The public API answers 401 to every request without one: say so before any task starts.
            raise InputError(
                f"{self.name} needs an API key for {self.base_url}: set OPENAI_API_KEY, "
                "or point OPENAI_BASE_URL at your OpenAI-compatible server"
            )
        self.api_key = key or PLACEHOLDER_API_KEY
        self.timeout = timeout
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        # What each server refused of the ways to ask for JSON: shared by the process.
        self._formats = formats if formats is not None else endpoint_formats

    @classmethod
    def ollama(
        cls, model: str, *, base_url: str | None = None, api_key: str | None = None, timeout: float = 60
    ) -> OpenAIModel:
        """``ollama:MODEL``: Ollama's OpenAI-compatible API.

        At ``OLLAMA_BASE_URL`` if set (a URL ending in ``/v1``), else
        ``http://localhost:11434/v1``. Ollama needs no key, so none of the
        user's is sent to it.
        """
        base_url = base_url or os.environ.get("OLLAMA_BASE_URL") or OLLAMA_BASE_URL
        return cls(model, base_url=base_url, api_key=api_key or "ollama", timeout=timeout, provider="ollama")

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.base_url!r})"

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        """Ask the server's ``/chat/completions`` for one answer to `request`.

        A request for JSON uses the best ``response_format`` the server has
        not refused (see `ratchet.providers._structured`); a refusal moves to
        the next one, within this call. The request's model settings are sent
        by OpenAI's names (`chat_settings`); every one has one. The longest
        answer goes as ``max_tokens``, or ``max_completion_tokens`` to a
        server that asked for that name (see `_create`).

        Raises:
            ModelError: the server failed (``retryable`` per the HTTP status, or
                True when no answer came), or answered something unusable
                (`MalformedAnswer`: malformed JSON or tool arguments, not retryable).
        """
        return await self._answer(request, ordinal, None)

    async def complete_streaming(
        self, request: ModelRequest, *, ordinal: int, on_text: TextSink
    ) -> ModelResponse:
        """Answer as `complete` does, streamed (``stream=True``), handing `on_text` each piece of text.

        The chunks are added up (`ChatStream`) into the answer `complete`
        would give for the same reply. Usage is asked for with
        ``stream_options.include_usage``; a server that refuses that option
        is asked again at once without it (and remembered, as a refused
        ``max_tokens`` is), and its usage is what its chunks carry; a stream
        that carries none (llama.cpp's server ignores the option) has its
        counts estimated from the characters, marked ``estimated`` (`chat_response`).
        A request for JSON streams no text: its content is the JSON value.

        Raises:
            ModelError: as `complete`; a stream cut off midway (the connection
                closed, stalled past the timeout, or an error in place of the
                next chunk) is retryable, with no status.
        """
        return await self._answer(request, ordinal, on_text)

    async def _answer(self, request: ModelRequest, ordinal: int, on_text: TextSink | None) -> ModelResponse:
        """One answer, streamed when `on_text` is given: the ways of asking for JSON are tried in turn."""
        import openai

        ways = (
            self._formats.ways(self._endpoint, OPENAI_WAYS, request.output_schema is not None)
            if request.wants_json
            else ["prompt"]
        )
        for way in ways:
            arguments = self._arguments(request, way, stream=on_text is not None)
            try:
                answer = await self._create(arguments)
            except openai.APIStatusError as exc:
                if way != ways[-1] and refusal_names(exc.body, exc.message, OPENAI_REFUSABLE):
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
            if on_text is not None:
                # JSON is not text to read as it comes: its content is the value, whole.
                answer = await self._read_stream(answer, None if request.wants_json else on_text)
            return chat_response(
                self.name,
                request,
                answer,
                ordinal,
                provider=self.provider,
                asked=self.model,
                url=self.base_url,
            )
        raise AssertionError("unreachable: the last way (the prompt) is never refused")

    async def _read_stream(self, stream: AsyncStream[ChatCompletionChunk], on_text: TextSink | None) -> Any:
        """The streamed answer added up, its text handed on; a failure after the stream opened is a cut."""
        import openai

        chunks = ChatStream(on_text)
        try:
            async with stream:
                async for chunk in stream:
                    await chunks.add(chunk)
        except openai.APITimeoutError as exc:
            raise stream_cut(self.name, self.base_url, f"no chunk within {self.timeout:g} s") from exc
        except openai.APIConnectionError as exc:
            raise stream_cut(self.name, self.base_url, one_line(str(exc.__cause__ or exc))) from exc
        except openai.APIError as exc:  # an error event in place of the next chunk
            raise stream_cut(self.name, self.base_url, error_detail(exc.body, exc.message)) from exc
        return chunks.completion(self.name, self.base_url)

    @property
    def _endpoint(self) -> tuple[str, str]:
        return (self.base_url, self.model)

    async def _create(self, arguments: dict[str, Any]) -> Any:
        """One request (a `ChatCompletion`, or an `AsyncStream` of chunks); sent again at once without
        what the server refused by name.

        OpenAI's reasoning models refuse ``max_tokens`` with a 400 that says
        "Use 'max_completion_tokens' instead": the request goes again with
        that name. Many OpenAI-compatible servers refuse ``stream_options``:
        it goes again without. Either way the endpoint is remembered
        (`EndpointFormats`), so its later requests are right from the start.
        """
        import openai

        client = self._sdk_client()
        while True:
            try:
                # The SDK's overloads (streaming or not) can't be told apart from **arguments.
                return await client.chat.completions.create(**arguments)
            except openai.APIStatusError as exc:
                refused = self._refused_argument(arguments, exc)
                if refused is None:
                    raise
                self._formats.refuse(self._endpoint, refused)
                if refused == MAX_TOKENS:
                    arguments = {**arguments, MAX_COMPLETION_TOKENS: arguments[MAX_TOKENS]}
                arguments = {name: value for name, value in arguments.items() if name != refused}

    @staticmethod
    def _refused_argument(arguments: dict[str, Any], exc: openai.APIStatusError) -> str | None:
        """The argument an error answer refuses that can be sent otherwise, or None."""
        if MAX_TOKENS in arguments and refusal_names(exc.body, exc.message, (MAX_COMPLETION_TOKENS,)):
            return MAX_TOKENS
        if STREAM_OPTIONS in arguments and refusal_names(exc.body, exc.message, (STREAM_OPTIONS,)):
            return STREAM_OPTIONS
        return None

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

    def _arguments(self, request: ModelRequest, way: str, *, stream: bool = False) -> dict[str, Any]:
        messages = parse_messages(self.name, request)
        response_format = openai_response_format(way, request.output_schema)
        if request.wants_json:
            # The schema goes in the prompt when the server is not given it.
            told = request.output_schema is not None and way not in ("json_schema", "json_object_schema")
            extra = schema_instruction(request.output_schema) if told and request.output_schema else ""
            messages = with_json_instruction(messages, extra)
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [chat_message(message) for message in messages],
        }
        if request.tools:
            arguments["tools"] = chat_tools(self.name, request)
        if response_format is not None:
            arguments["response_format"] = response_format
        # Every server that imitates the API knows max_tokens; OpenAI's reasoning models refuse it
        # and name the one they want (`_create`), which is remembered for the endpoint.
        renamed = MAX_TOKENS in self._formats.refused(self._endpoint)
        arguments.update(
            chat_settings(request.settings, max_tokens=MAX_COMPLETION_TOKENS if renamed else MAX_TOKENS)
        )
        if stream:
            arguments["stream"] = True
            if STREAM_OPTIONS not in self._formats.refused(self._endpoint):
                arguments[STREAM_OPTIONS] = {"include_usage": True}
        return arguments

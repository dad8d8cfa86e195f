"""Every provider LiteLLM reaches: ``litellm:gemini/gemini-1.5-pro``, ``litellm:groq/llama-3.1-8b-instant``.

The part after ``litellm:`` is LiteLLM's own model string (``PROVIDER/MODEL``),
and its credentials come from the variables LiteLLM reads (``GEMINI_API_KEY``,
``AWS_ACCESS_KEY_ID``, ``AZURE_API_KEY`` ...). LiteLLM does the HTTP, in the
OpenAI chat shape both ways (`_chat_shape`); this module turns its exceptions
into `ModelError`, classified as for the other providers.

LiteLLM takes seconds to import, so it is imported on the first request.
Before that import, LiteLLM is told to use the price table it ships with
(``LITELLM_LOCAL_MODEL_COST_MAP``) instead of fetching one, and its telemetry
and its "give feedback" banners are turned off: a worker without network
must not wait on either.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ._chat_shape import chat_message, chat_response, chat_settings, chat_tools
from ._http import connection_error, http_error, one_line, stream_cut
from ._structured import endpoint_formats, refusal_names, schema_instruction
from ._wire import parse_messages, with_json_instruction
from .base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    TextSink,
    UnsupportedSetting,
    require_library,
)
from .settings import ModelSettings

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["LiteLLMModel"]

# How a streamed answer asks for its usage; a server that refuses it is asked again without.
STREAM_OPTIONS = "stream_options"
# LiteLLM prefixes its messages with its class names ("litellm.RateLimitError: ... OpenAIException - ").
_PREFIX = re.compile(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)?: )+(?:\w+Exception - )?")


class LiteLLMModel:
    """A `ModelProvider` over LiteLLM's ``acompletion``.

    Constructing one does no I/O and does not import LiteLLM; without it
    installed it raises `MissingExtra`, which names the ``[litellm]`` extra.

    Args:
        model: LiteLLM's model string, ``PROVIDER/MODEL`` (``openai/gpt-4o-mini``).
        base_url: the API root (LiteLLM's ``api_base``); by default the provider's.
        api_key: by default the variable LiteLLM reads for that provider.
        timeout: seconds one request may take; a timeout is a retryable failure.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
    ) -> None:
        require_library("litellm", feature="the litellm: provider", library="LiteLLM", extra="litellm")
        self.model = model
        self.name = f"litellm:{model}"
        self.provider = "litellm"  # the protocol, whatever endpoint names the model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"LiteLLMModel({self.model!r}, base_url={self.base_url!r})"

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        """Ask LiteLLM for one answer to `request`.

        A request for JSON asks for a JSON object (``response_format``, dropped
        for providers without it) and spells out the schema in the prompt.
        Model settings go by OpenAI's names; LiteLLM translates them.

        Raises:
            UnsupportedSetting: a model setting LiteLLM cannot send to the
                model's provider (see `check_settings`), before any request.
            ModelError: the provider failed (``retryable`` per the HTTP status,
                or True when no answer came), or answered something unusable
                (`MalformedAnswer`: not retryable).
        """
        return await self._answer(request, ordinal, None)

    async def complete_streaming(
        self, request: ModelRequest, *, ordinal: int, on_text: TextSink
    ) -> ModelResponse:
        """Answer as `complete` does, streamed (``stream=True``), handing `on_text` each piece of text.

        LiteLLM adds the chunks up (``stream_chunk_builder``) into the
        completion `complete` would get, read the same way. Usage is asked
        for (``stream_options.include_usage``; a server that refuses it is
        asked again without, and remembered); LiteLLM counts it itself when
        the server sends none (unstreamed, it counts 0). A request for JSON
        streams no text.

        Raises:
            ModelError: as `complete`; a stream cut off midway is retryable,
                with no status.
        """
        return await self._answer(request, ordinal, on_text)

    async def _answer(self, request: ModelRequest, ordinal: int, on_text: TextSink | None) -> ModelResponse:
        litellm = _litellm()
        self.check_settings(request.settings)
        arguments = self._arguments(request, stream=on_text is not None)
        try:
            try:
                completion = await litellm.acompletion(**arguments)
            except Exception as exc:
                if STREAM_OPTIONS not in arguments or not refusal_names(
                    getattr(exc, "body", None), str(exc), (STREAM_OPTIONS,)
                ):
                    raise
                endpoint_formats.refuse(self._endpoint, STREAM_OPTIONS)
                arguments.pop(STREAM_OPTIONS)
                completion = await litellm.acompletion(**arguments)
        except Exception as exc:
            raise self._error(litellm, exc) from exc
        if on_text is not None:
            # JSON is not text to read as it comes: its content is the value, whole.
            completion = await self._read_stream(litellm, completion, None if request.wants_json else on_text)
        response = chat_response(
            self.name, request, completion, ordinal, provider="litellm", asked=self.model, url=self._where
        )
        # LiteLLM's model string (``gemini/...``), not the server's name: it keys LiteLLM's price table.
        return response.model_copy(update={"model": self.model})

    async def _read_stream(self, litellm: ModuleType, stream: Any, on_text: TextSink | None) -> Any:
        """The chunks, their text handed on as they come, added up by LiteLLM; a failure midway is a cut."""
        chunks: list[Any] = []
        pieces = aiter(stream)
        while True:
            try:
                chunk = await anext(pieces)
            except StopAsyncIteration:
                break
            except Exception as exc:  # LiteLLM's MidStreamFallbackError, or whatever broke under it
                raise stream_cut(self.name, self._where, _cut_detail(exc)) from exc
            chunks.append(chunk)
            choices = getattr(chunk, "choices", None) or []
            text = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
            if on_text is not None and isinstance(text, str) and text:
                await on_text(text)
        completion = litellm.stream_chunk_builder(chunks) if chunks else None
        choices = getattr(completion, "choices", None) or []
        if not choices or not getattr(choices[0], "finish_reason", None):
            raise stream_cut(self.name, self._where, "it ended before its finish reason")
        return completion

    @property
    def _where(self) -> str:
        return self.base_url or f"{self.model.partition('/')[0]}'s API"

    @property
    def _endpoint(self) -> tuple[str, str]:
        return (self.base_url or "", self.model)

    def check_settings(self, settings: ModelSettings | None) -> None:
        """Refuse a model setting LiteLLM has no way to send to the model's provider.

        LiteLLM lists the OpenAI parameters it translates for each provider
        (``get_supported_openai_params``); a setting not among them would be
        dropped without a word (Ratchet sends ``drop_params``), so it is
        refused instead. A provider LiteLLM lists nothing for is sent them all.
        Imports LiteLLM (seconds), but only when a setting is given.

        Raises:
            UnsupportedSetting: one line naming the setting and the provider.
        """
        if settings is None or not settings.given():
            return
        litellm = _litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(self.model)
            supported = litellm.get_supported_openai_params(model=self.model, custom_llm_provider=provider)
        except Exception:  # a model string LiteLLM cannot place: its request will say so
            return
        if not supported:
            return
        # chat_settings keeps the settings' order: each setting beside the name LiteLLM takes it by.
        for setting, name in zip(settings.given(), chat_settings(settings), strict=True):
            if name not in supported:
                raise UnsupportedSetting(
                    f"{self.name} takes no {setting}: LiteLLM sends no {name!r} to {provider}"
                )

    def _arguments(self, request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        messages = parse_messages(self.name, request)
        if request.wants_json:
            schema = request.output_schema
            messages = with_json_instruction(messages, schema_instruction(schema) if schema else "")
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": [chat_message(message) for message in messages],
            "timeout": self.timeout,
            # Ratchet's retry middleware retries, durably; LiteLLM must not retry on its own.
            "num_retries": 0,
            "max_retries": 0,
            # A provider without some parameter (response_format) gets the request without it.
            "drop_params": True,
        }
        if self.base_url is not None:
            arguments["api_base"] = self.base_url
        if self.api_key is not None:
            arguments["api_key"] = self.api_key
        if request.tools:
            arguments["tools"] = chat_tools(self.name, request)
        if request.wants_json:
            arguments["response_format"] = {"type": "json_object"}
        arguments.update(chat_settings(request.settings))
        if stream:
            arguments["stream"] = True
            if STREAM_OPTIONS not in endpoint_formats.refused(self._endpoint):
                arguments[STREAM_OPTIONS] = {"include_usage": True}
        return arguments

    def _error(self, litellm: ModuleType, exc: Exception) -> ModelError:
        where = self._where
        if isinstance(exc, litellm.Timeout):
            return ModelError.from_status(
                None, f"{self.name}: no answer from {where} within {self.timeout:g} s"
            )
        if isinstance(exc, litellm.APIConnectionError) or _no_connection(exc):
            return connection_error(self.name, where, _transport_cause(exc))
        message = _PREFIX.sub("", one_line(str(getattr(exc, "message", None) or exc)))
        status = getattr(exc, "status_code", None)
        if isinstance(exc, litellm.ContextWindowExceededError):
            return ModelError(
                f"{self.name}: HTTP {status}: the prompt does not fit the model's context: {message}",
                status=status,
                retryable=False,
            )
        if isinstance(status, int):
            headers = getattr(exc, "litellm_response_headers", None) or getattr(
                getattr(exc, "response", None), "headers", None
            )
            body = getattr(exc, "body", None)
            return http_error(self.name, status, body if body else message, message, headers or {})
        return ModelError(f"{self.name}: {type(exc).__name__}: {message}", retryable=False)


def _cut_detail(exc: Exception) -> str:
    """What broke a stream midway, in a few words: the failure LiteLLM wraps, without its class names."""
    cause = getattr(exc, "original_exception", None) or exc
    message = _PREFIX.sub("", one_line(str(getattr(cause, "message", None) or cause)))
    return message.split(" Original exception:")[0] or type(cause).__name__


def _litellm() -> ModuleType:
    """LiteLLM, imported with its network calls at import time and its telemetry off."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def _no_connection(exc: BaseException) -> bool:
    """Whether LiteLLM reports, as a status error, a request that got no HTTP answer."""
    return _transport_cause(exc) is not exc


def _transport_cause(exc: BaseException) -> BaseException:
    """The connection failure (httpx's, or the OpenAI SDK's) under `exc`, else `exc`."""
    import httpx
    import openai

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if seen is not exc and isinstance(seen, (httpx.TransportError, openai.APIConnectionError)):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc

"""OpenAI's chat-completions shape, both ways: `openai:` and `litellm:` speak it.

`chat_message`, `chat_tools` and `chat_settings` write a `ModelRequest`'s
messages, tools and model settings as the API takes them; `chat_response`
reads a completion (the OpenAI SDK's, or LiteLLM's look-alike) into a
`ModelResponse`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import JsonValue

from ._http import one_line
from ._wire import (
    ChatMessage,
    decode_arguments,
    decode_json_answer,
    make_tool_call,
    message_text,
    parse_tools,
)
from .base import CHARS_PER_TOKEN, MalformedAnswer, ModelError, ModelRequest, ModelResponse, ToolCall, Usage
from .settings import ModelSettings

__all__ = ["chat_message", "chat_response", "chat_settings", "chat_tools"]

log = logging.getLogger("ratchet.providers")
# The servers that answered without usage, warned about once per process.
_unreported: set[str] = set()


def chat_message(message: ChatMessage) -> dict[str, Any]:
    """One message as the chat-completions API takes it."""
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


def chat_tools(model: str, request: ModelRequest) -> list[dict[str, Any]]:
    """The request's tools as function tools."""
    return [
        {
            "type": "function",
            "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
        }
        for spec in parse_tools(model, request)
    ]


def chat_settings(settings: ModelSettings | None, *, max_tokens: str = "max_tokens") -> dict[str, Any]:
    """The model settings that are set, by the API's names.

    Args:
        max_tokens: the name the longest answer goes by: ``max_tokens``, which
            every compatible server knows, or ``max_completion_tokens``, for a
            server that asked for it (OpenAI's reasoning models refuse the other).
    """
    if settings is None:
        return {}
    names = {"max_output_tokens": max_tokens}
    return {names.get(name, name): value for name, value in settings.given().items()}


def chat_response(
    model: str,
    request: ModelRequest,
    completion: Any,
    ordinal: int,
    *,
    provider: str,
    asked: str,
    url: str,
) -> ModelResponse:
    """A completion's first choice as a `ModelResponse`.

    A completion that reports no usage (a stream from a server that ignores
    ``stream_options.include_usage``: llama.cpp's, llama-cpp-python's) gets
    estimated counts, never a confident zero (`_usage`).

    Args:
        model: the provider's name, for messages (``openai:gpt-4o-mini``).
        provider, asked: the protocol prefix and the model name asked for (see
            `ModelResponse.provider`); the answer's own model name wins over `asked`.
        url: the server that answered, for the warning about a missing usage.

    Raises:
        ModelError: no choice, or a tool call that is not a function call.
        MalformedAnswer: the JSON asked for, or a tool's arguments, do not decode.
    """
    choices = getattr(completion, "choices", None)
    if not choices:
        raise ModelError(f"{model} answered with no choices", retryable=False)
    choice = choices[0]
    message = choice.message
    truncated = choice.finish_reason == "length"
    calls = [_tool_call(model, index, call) for index, call in enumerate(message.tool_calls or [])]
    content: JsonValue = message.content
    if request.wants_json and (content or not calls):
        refusal = getattr(message, "refusal", None)
        if not content and refusal:
            raise MalformedAnswer(f"{model} refused to answer: {one_line(str(refusal))}")
        content = decode_json_answer(model, request, message.content, truncated=truncated)
    return ModelResponse(
        content=content,
        tool_calls=calls,
        usage=_usage(model, url, request, completion),
        ordinal=ordinal,
        provider=provider,
        model=answered
        if isinstance(answered := getattr(completion, "model", None), str) and answered
        else asked,
        response_id=_text_or_none(getattr(completion, "id", None)),
        finish_reason=_text_or_none(choice.finish_reason),
    )


def _usage(model: str, url: str, request: ModelRequest, completion: Any) -> Usage:
    """The counts the server reported; estimated from the characters when it reported none.

    A server that reports no prompt tokens reported no usage (a request is
    never free of tokens; LiteLLM fills in only the answer's count when the
    server sends none): the prompt's count is estimated, and the answer's too
    unless it was given. Zero tokens would price the call at $0 and let
    ``max_cost`` stop holding without a word; an estimate keeps it holding,
    roughly, and the usage says it is one. The first time a server does
    this in the process, one warning line names it.
    """
    usage = getattr(completion, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None) or 0
    answered = getattr(usage, "completion_tokens", None) or 0
    if prompt:
        return Usage(prompt_tokens=prompt, completion_tokens=answered)
    message = completion.choices[0].message
    sent = json.dumps([request.messages, request.tools], ensure_ascii=False, default=str)
    said = message.content if isinstance(message.content, str) else ""
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        said += f"{getattr(function, 'name', '')}{getattr(function, 'arguments', '')}"
    estimate = Usage.estimate(len(sent), len(said))
    most = request.settings.max_output_tokens if request.settings is not None else None
    if answered or (most is not None and estimate.completion_tokens > most):
        # A count given wins; an answer is never longer than the most asked for.
        estimate = estimate.model_copy(update={"completion_tokens": answered or most})
    if url not in _unreported:
        _unreported.add(url)
        log.warning(
            "%s at %s reports no token usage: Ratchet estimates each call's tokens from its characters "
            "(%d a token), marked estimated; its costs, and max_cost, are approximate",
            model,
            url,
            CHARS_PER_TOKEN,
        )
    return estimate


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _tool_call(model: str, index: int, call: Any) -> ToolCall:
    function = getattr(call, "function", None)
    if function is None:
        raise ModelError(
            f"{model} asked for a {getattr(call, 'type', 'non-function')} tool call; "
            "Ratchet offers function tools only",
            retryable=False,
        )
    arguments = decode_arguments(model, function.name, function.arguments)
    return make_tool_call(model, call.id or f"call_{index}", function.name, arguments)

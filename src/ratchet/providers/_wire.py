"""The wire shapes both providers share: request messages and tool schemas as records,
and a model's JSON answers and tool arguments decoded (or refused as a `ModelError`).

Ratchet's requests are OpenAI-shaped; each provider turns these records into
its own API's arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
    model_validator,
)

from ._http import one_line
from .base import MalformedAnswer, ModelError, ModelRequest, ToolCall

__all__ = [
    "JSON_INSTRUCTION",
    "ChatMessage",
    "ToolSpec",
    "decode_arguments",
    "decode_json_answer",
    "make_tool_call",
    "message_text",
    "parse_messages",
    "parse_tools",
    "with_json_instruction",
]

JSON_INSTRUCTION = "Answer with one JSON object only: no text before or after it, no code fences."


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
            f"{model}: a tool of the {request.purpose} request is not a tool schema: {_first_problem(exc)}",
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


def with_json_instruction(messages: list[ChatMessage], extra: str = "") -> list[ChatMessage]:
    """The messages with `JSON_INSTRUCTION` (and `extra`) added to the first system message (or a new one)."""
    instruction = f"{JSON_INSTRUCTION} {extra}".strip()
    for index, message in enumerate(messages):
        if message.role == "system":
            text = f"{message_text(message.content)}\n\n{instruction}".lstrip()
            return [
                *messages[:index],
                message.model_copy(update={"content": text}),
                *messages[index + 1 :],
            ]
    return [ChatMessage(role="system", content=instruction), *messages]


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
            (feed the error back and ask again).
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
    raise MalformedAnswer(
        f"{model} returned malformed JSON for a {request.purpose} request ({problem}{cut}): {_excerpt(text)}",
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
            raise MalformedAnswer(
                f"{model} returned malformed JSON arguments for tool {tool!r} "
                f"({exc.msg} at line {exc.lineno}, column {exc.colno}): {_excerpt(arguments)}",
            ) from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedAnswer(
            f"{model} returned arguments for tool {tool!r} that are not a JSON object: "
            f"{_excerpt(json.dumps(value))}",
        )
    return value


def make_tool_call(model: str, call_id: str, name: str, arguments: dict[str, JsonValue]) -> ToolCall:
    """A `ToolCall`, or a non-retryable `ModelError` if the model's call is unusable."""
    try:
        return ToolCall(id=call_id, name=name, arguments=arguments)
    except ValidationError as exc:
        raise MalformedAnswer(f"{model} returned an unusable tool call: {_first_problem(exc)}") from exc


def _excerpt(text: str | None, limit: int = 200) -> str:
    text = text or ""
    return repr(text if len(text) <= limit else text[:limit] + "...")

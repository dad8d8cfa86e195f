"""What a span says of a model call, a tool call and an agent's run, in the OpenTelemetry GenAI conventions.

The attribute names and the JSON shapes of messages are the GenAI semantic
conventions' (``gen_ai.*``, ``server.*``). Prompts, answers, tool arguments
and results go on spans only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true``, the conventions' opt-in: they may hold secrets, and the journal
keeps them anyway. Structured values are JSON text, as the conventions ask
of spans where the SDK takes no structured attribute.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from pydantic import JsonValue

from ..records import Task

__all__ = [
    "CAPTURE_VARIABLE",
    "agent_attributes",
    "captures_content",
    "conversation_id",
    "input_messages",
    "is_agent_task",
    "model_attributes",
    "model_tool_calls",
    "output_messages",
    "tool_attributes",
    "tool_call_id",
]

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The agent loop's reference (ratchet.agent.loop.AGENT_WORKFLOW): observe sits below the agent.
_AGENT_LOOP = "ratchet.agent.loop:agent_loop"
# What a request's settings are called in the conventions.
_SETTINGS = {
    "temperature": "gen_ai.request.temperature",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
}

Attributes = dict[str, str | int | float | bool | tuple[str, ...]]

_tool_call_ids: ContextVar[Mapping[int, str] | None] = ContextVar("ratchet_tool_call_ids", default=None)


@contextlib.contextmanager
def model_tool_calls(ids: Mapping[int, str]) -> Iterator[None]:
    """Name, by journal seq, the model's tool-call id of each tool call made in the block.

    The agent runs a model answer's tool calls inside it, so each call's span
    says which of the answer's calls it is (``gen_ai.tool.call.id``); the
    journal keys calls by seq and needs no more.
    """
    token = _tool_call_ids.set(ids)
    try:
        yield
    finally:
        _tool_call_ids.reset(token)


def tool_call_id(seq: int) -> str | None:
    """The model's id of the tool call at `seq`, when it was made in `model_tool_calls`."""
    ids = _tool_call_ids.get()
    return None if ids is None else ids.get(seq)


def captures_content() -> bool:
    """Whether messages, tool arguments and results go on spans (the conventions' opt-in variable)."""
    return os.environ.get(CAPTURE_VARIABLE, "").strip().lower() == "true"


def is_agent_task(task: Task) -> bool:
    """Whether the task is an agent's run (``ratchet.Agent``), not a workflow's."""
    return task.workflow == _AGENT_LOOP


def conversation_id(task: Task) -> str:
    """The conversation a task belongs to: its agent's session, else the task itself."""
    spec = task.inputs_params.get("agent")
    session = spec.get("session") if isinstance(spec, dict) else None
    return session if isinstance(session, str) and session else task.id


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def split_model(model: str | None) -> tuple[str | None, str | None]:
    """``provider:name`` as (provider, name); (None, None) when no model is named."""
    if not model:
        return None, None
    provider, _, name = model.partition(":")
    return (provider, name) if name else (None, provider)


def _answered(answer: JsonValue) -> dict[str, Any]:
    """Who answered, and how, from a model call's recorded answer.

    A Ratchet `ModelResponse` (``model``, ``response_id``, ...), or the answer
    of another library's model that an integration journals (pydantic-ai's
    ``model_name``, ``provider_response_id``, ...).
    """
    if not isinstance(answer, dict):
        return {}

    def first(*keys: str) -> str | None:
        for key in keys:
            value = answer.get(key)
            if isinstance(value, str) and value:
                return value
        return None

    return {
        "provider": first("provider", "provider_name"),
        "model": first("model", "model_name"),
        "id": first("response_id", "provider_response_id"),
        "finish_reason": first("finish_reason"),
        "url": first("provider_url"),
    }


def model_attributes(
    task: Task,
    model: str | None,
    request: Any,
    answer: JsonValue,
    usage: object,
    endpoint: str | None,
    protocol: str | None = None,
) -> tuple[str, Attributes]:
    """A model call's span name (``chat MODEL``) and its ``gen_ai.*`` attributes.

    ``gen_ai.provider.name`` is the protocol the call spoke (``openai``), as
    the conventions mean it: a model string through a named endpoint of
    ``ratchet.toml`` (``gpu:qwen2.5``) starts with the endpoint's name, which
    goes on ``ratchet.model.endpoint`` instead. Counts Ratchet estimated (a
    server that reported none) are the ``gen_ai.usage.*`` given, and
    ``ratchet.usage.estimated`` says so.

    Args:
        model: the ``provider:name`` the call asked (None: the task's).
        request: its `ModelRequest`, when it is Ratchet's (None for an integration's).
        answer: what it answered, when it succeeded.
        usage: the call's usage (``meta["usage"]``).
        endpoint: the URL the request went to, when Ratchet's provider has one (an
            integration's answer may say it: pydantic-ai's ``provider_url``).
        protocol: the protocol prefix of Ratchet's provider that took the call
            (its ``provider``), when it says.
    """
    said = _answered(answer)
    prefix, name = split_model(model or task.model)
    provider = protocol or prefix
    # An integration's model (pydantic-ai's) is named by its answer, not by the call.
    provider = provider or said.get("provider")
    name = name or said.get("model")
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider or "unknown",
        "gen_ai.system": provider or "unknown",  # the name before gen_ai.provider.name, still read
        "gen_ai.conversation.id": conversation_id(task),
    }
    if protocol and prefix and prefix != protocol:
        attributes["ratchet.model.endpoint"] = prefix
    if name:
        attributes["gen_ai.request.model"] = name
    settings = getattr(request, "settings", None)
    if settings is not None:
        for key, value in settings.given().items():
            if key in _SETTINGS and isinstance(value, (int, float)):
                attributes[_SETTINGS[key]] = value
    if getattr(request, "wants_json", False):
        attributes["gen_ai.output.type"] = "json"
    if said.get("model"):
        attributes["gen_ai.response.model"] = said["model"]
    if said.get("id"):
        attributes["gen_ai.response.id"] = said["id"]
    if said.get("finish_reason"):
        attributes["gen_ai.response.finish_reasons"] = (said["finish_reason"],)
    if isinstance(usage, Mapping):
        attributes["gen_ai.usage.input_tokens"] = _count(usage.get("prompt_tokens"))
        attributes["gen_ai.usage.output_tokens"] = _count(usage.get("completion_tokens"))
        if usage.get("estimated") is True:
            attributes["ratchet.usage.estimated"] = True
    attributes |= _server(endpoint or said.get("url"))
    if captures_content():
        messages = getattr(request, "messages", None)
        if isinstance(messages, list):
            attributes["gen_ai.input.messages"] = _json(input_messages(messages))
        if isinstance(answer, dict) and request is not None:
            attributes["gen_ai.output.messages"] = _json(output_messages(answer))
    return f"chat {name or 'unknown'}", attributes


def tool_attributes(name: str, call_id: str | None, arguments: JsonValue, result: JsonValue) -> Attributes:
    """A tool call's ``gen_ai.*`` attributes (its span is ``execute_tool NAME``)."""
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",  # run by the client (Ratchet), the model gave its arguments
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    if captures_content():
        attributes["gen_ai.tool.call.arguments"] = _json(arguments)
        if result is not None:
            attributes["gen_ai.tool.call.result"] = _json(result)
    return attributes


def agent_attributes(task: Task) -> Attributes:
    """The ``invoke_agent`` attributes of an agent task's span."""
    provider, name = split_model(task.model)
    attributes: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": task.agent,
        "gen_ai.conversation.id": conversation_id(task),
    }
    if provider:
        attributes["gen_ai.provider.name"] = provider
    if name:
        attributes["gen_ai.request.model"] = name
    return attributes


def _server(endpoint: str | None) -> Attributes:
    if not endpoint:
        return {}
    try:
        parts = urlsplit(endpoint)
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # a malformed URL: the call went nowhere we can name
        return {}
    if not parts.hostname:
        return {}
    attributes: Attributes = {"server.address": parts.hostname}
    if port is not None:
        attributes["server.port"] = port
    return attributes


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def _text(content: JsonValue) -> str:
    return content if isinstance(content, str) else _json(content)


def _arguments(raw: Any) -> JsonValue:
    if isinstance(raw, str):
        try:
            decoded: JsonValue = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return raw
        return decoded
    return raw if raw is not None else {}


def _tool_call_part(call: Any) -> dict[str, JsonValue]:
    """A tool call as a ``tool_call`` part: OpenAI's wire shape or a dumped `ToolCall`."""
    if not isinstance(call, dict):
        return {"type": "tool_call", "id": None, "name": str(call), "arguments": None}
    function = call.get("function")
    source = function if isinstance(function, dict) else call
    return {
        "type": "tool_call",
        "id": call.get("id"),
        "name": source.get("name"),
        "arguments": _arguments(source.get("arguments")),
    }


def input_messages(messages: list[dict[str, JsonValue]]) -> list[dict[str, JsonValue]]:
    """A request's chat messages in the conventions' input shape (``role``, ``parts``)."""
    shaped: list[dict[str, JsonValue]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        parts: list[JsonValue] = []
        if role == "tool":
            parts.append(
                {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}
            )
        elif content not in (None, ""):
            parts.append({"type": "text", "content": _text(content)})
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            parts.extend(_tool_call_part(call) for call in calls)
        entry: dict[str, JsonValue] = {"role": role if isinstance(role, str) else "user", "parts": parts}
        if isinstance(message.get("name"), str) and role != "tool":
            entry["name"] = message["name"]
        shaped.append(entry)
    return shaped


def output_messages(answer: dict[str, JsonValue]) -> list[dict[str, JsonValue]]:
    """A `ModelResponse`'s answer in the conventions' output shape: one assistant message."""
    parts: list[JsonValue] = []
    content = answer.get("content")
    if content not in (None, ""):
        parts.append({"type": "text", "content": _text(content)})
    calls = answer.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(_tool_call_part(call) for call in calls)
    finish = answer.get("finish_reason")
    return [
        {
            "role": "assistant",
            "parts": parts,
            "finish_reason": finish if isinstance(finish, str) and finish else "stop",
        }
    ]

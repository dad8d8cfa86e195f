"""Structured output: the ways of asking a server for a JSON answer, and which ones each endpoint refuses.

Servers that speak one API still differ in what they take. For OpenAI's
chat completions, in the order tried:

1. ``{"type": "json_schema", "json_schema": {"name", "schema"}}``: OpenAI,
   vLLM, llama.cpp's ``llama-server``, LM Studio, Ollama;
2. ``{"type": "json_object", "schema": ...}``: the llama-cpp-python server;
3. ``{"type": "json_object"}``: JSON mode without a schema;
4. no ``response_format``: the prompt alone asks for JSON (and spells the schema out).

Anthropic's Messages API takes the schema as a tool the model is forced to
call (``tool_choice``); a server that refuses that gets the prompt alone.

A request starts at the first way its endpoint (base URL and model) has not
refused; a refusal (an error answer that names the parameter, whatever its
HTTP status: 400, 422, or llama-cpp-python's 500) moves it to the next way
and is remembered for the life of the process, so the next request goes
straight to the way that works.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from ._http import error_detail
from .base import OutputSchema

__all__ = [
    "ANTHROPIC_REFUSABLE",
    "ANTHROPIC_WAYS",
    "OPENAI_REFUSABLE",
    "OPENAI_WAYS",
    "EndpointFormats",
    "endpoint_formats",
    "openai_response_format",
    "refusal_names",
    "schema_instruction",
]

OPENAI_WAYS = ("json_schema", "json_object_schema", "json_object", "prompt")
ANTHROPIC_WAYS = ("forced_tool", "prompt")
# The parameters whose naming in an error answer makes it a refusal of the way tried.
OPENAI_REFUSABLE = ("response_format", "json_schema")
ANTHROPIC_REFUSABLE = ("tool_choice", "tools")
_NEEDS_SCHEMA = frozenset({"json_schema", "json_object_schema", "forced_tool"})


class EndpointFormats:
    """Which ways of asking each endpoint refused (thread-safe; one per process).

    The ways of asking for JSON, and the name of an answer's token limit
    (``max_tokens``, refused by OpenAI's reasoning models: openai_compat.py).
    """

    def __init__(self) -> None:
        self._refused: dict[tuple[str, str], set[str]] = {}
        self._lock = threading.Lock()

    def ways(self, endpoint: tuple[str, str], order: tuple[str, ...], schema: bool) -> list[str]:
        """The ways to try for a request, best first: those the endpoint has not refused.

        Args:
            endpoint: (base URL, model).
            order: every way of the API, best first; the last one (the prompt) is never refused.
            schema: whether the request carries an output schema (else the schema's ways are skipped).
        """
        with self._lock:
            refused = set(self._refused.get(endpoint, ()))
        return [
            way
            for way in order
            if (schema or way not in _NEEDS_SCHEMA) and (way not in refused or way == order[-1])
        ]

    def refuse(self, endpoint: tuple[str, str], way: str) -> None:
        """Remember that `endpoint` refused `way`."""
        with self._lock:
            self._refused.setdefault(endpoint, set()).add(way)

    def refused(self, endpoint: tuple[str, str]) -> frozenset[str]:
        """The ways `endpoint` refused so far."""
        with self._lock:
            return frozenset(self._refused.get(endpoint, ()))


# Every provider of the process shares it: a task builds its own provider object, and
# the second task on a server should not pay the first one's refusals again.
endpoint_formats = EndpointFormats()


def openai_response_format(way: str, schema: OutputSchema | None) -> dict[str, Any] | None:
    """The ``response_format`` argument for `way`, or None to send none."""
    if way == "json_schema" and schema is not None:
        return {"type": "json_schema", "json_schema": {"name": schema.name, "schema": schema.json_schema}}
    if way == "json_object_schema" and schema is not None:
        return {"type": "json_object", "schema": schema.json_schema}
    if way == "json_object":
        return {"type": "json_object"}
    return None


def refusal_names(body: object, message: str, parameters: tuple[str, ...]) -> bool:
    """Whether an error answer refuses one of `parameters` (rather than failing for another reason).

    Servers refuse a parameter in many ways, so the status does not decide:
    OpenAI and vLLM answer 400 with the name in ``error.message``; FastAPI
    servers 422 with it in the location of a validation error (``detail``);
    llama-cpp-python's server 500, with the validation error written into
    ``error.message``. The answer refuses when its body or message names one
    of `parameters` as a word (``response_format``, ``'response_format.type'``),
    whatever its status. An error that names none (an outage, a bad key) is
    not a refusal, and fails as any other.
    """
    texts = [error_detail(body, message), message]
    if isinstance(body, Mapping):
        texts.append(json.dumps(body, default=str))
    elif isinstance(body, str):
        texts.append(body)
    named = re.compile(r"\b(?:" + "|".join(re.escape(name) for name in parameters) + r")\b")
    return any(named.search(text) for text in texts)


def schema_instruction(schema: OutputSchema) -> str:
    """What the prompt adds when the server is not given the schema itself."""
    return (
        f"The JSON object must fit this JSON schema: {json.dumps(schema.json_schema, separators=(',', ':'))}"
    )

"""A deterministic model for tests and demos, read from a JSON script.

The script maps each purpose to a list of entries. The request with ordinal
``k`` for purpose ``p`` takes entry ``k`` of list ``p``: the ordinal comes from
the journal, not from a counter in memory, so a resumed task (or a fresh
`ScriptedModel` on the same file) continues the script exactly where it stopped.
A request past the end of its purpose's list is an error that names the
purpose and the ordinal, never a made-up answer.

A task records the script's path as it records a tools file: relative to the
project root when the file is under it, absolute otherwise (`portable_model`),
so a moved project finds its script again. A script missing where a task
looks for it is missing like code (`ScriptNotFound`): the task waits for it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, JsonValue, ValidationError, model_validator

from ratchet.errors import InputError, ScriptNotFound
from ratchet.records import Record
from ratchet.trust.code import portable_path, project_path

from .base import ModelError, ModelRequest, ModelResponse, Purpose, TextSink, ToolCall, Usage

__all__ = ["ScriptedModel", "portable_model", "require_script"]

_PURPOSES = ", ".join(Purpose)


class ScriptedToolCall(Record):
    name: str = Field(min_length=1)
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    id: str | None = None


class ScriptedError(Record):
    status: int | None = None
    retry_after: float | None = Field(default=None, ge=0)
    message: str | None = None


class ScriptEntry(Record):
    """One scripted answer: content and/or tool calls, or an error.

    ``chunks`` are the pieces a streamed answer's text arrives in
    (`ScriptedModel.complete_streaming`); without ``content`` they are the
    content, joined. ``chunk_delay`` is slept before each piece. An error
    entry may carry ``chunks`` too: those pieces are sent, then the error is
    raised, as a stream cut midway.
    """

    content: JsonValue = None
    chunks: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    chunk_delay: float = Field(default=0.0, ge=0)
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    error: ScriptedError | None = None
    delay: float = Field(default=0.0, ge=0)
    usage: Usage | None = None

    @model_validator(mode="after")
    def _one_kind_of_answer(self) -> ScriptEntry:
        given = self.model_fields_set
        if "error" in given and given & {"content", "tool_calls", "usage"}:
            raise ValueError("an error entry carries only 'error', 'delay', 'chunks' and 'chunk_delay'")
        if not given & {"content", "chunks", "tool_calls", "error"}:
            raise ValueError("an entry needs 'content', 'chunks', 'tool_calls' or 'error'")
        if self.chunks is not None and "content" in given:
            if not isinstance(self.content, str):
                raise ValueError("'chunks' are the pieces of a text answer: 'content' must then be a string")
            joined = "".join(self.chunks)
            if joined != self.content:
                raise ValueError(
                    f"'chunks' join to {_excerpt(joined)}, not to 'content' {_excerpt(self.content)}"
                )
        if self.chunk_delay and not self.pieces:
            raise ValueError(
                "'chunk_delay' waits before each piece of text: give 'chunks' or a text 'content'"
            )
        return self

    @property
    def answer(self) -> JsonValue:
        """The answer's content: ``content``, else the pieces joined."""
        if self.chunks is not None and "content" not in self.model_fields_set:
            return "".join(self.chunks)
        return self.content

    @property
    def pieces(self) -> list[str]:
        """What a stream sends: the chunks, else a text content as one piece (no JSON value is streamed)."""
        if self.chunks is not None:
            return list(self.chunks)
        return [self.content] if isinstance(self.content, str) and self.content else []


def _excerpt(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


class Script(Record):
    """A whole script file: one list of entries per purpose.

    ``priced_as`` (``"openai:gpt-4o"``) prices the script's calls as that
    model's (docs/limits.md); without it they cost nothing.
    """

    priced_as: str | None = Field(default=None, pattern=r"^[^:\s]+:\S+$")
    plan: list[ScriptEntry] = Field(default_factory=list)
    act: list[ScriptEntry] = Field(default_factory=list)
    verify: list[ScriptEntry] = Field(default_factory=list)
    replan: list[ScriptEntry] = Field(default_factory=list)
    summarize: list[ScriptEntry] = Field(default_factory=list)

    def entries(self, purpose: Purpose) -> list[ScriptEntry]:
        entries: list[ScriptEntry] = getattr(self, purpose.value)
        return entries


class ScriptedModel:
    """A `ModelProvider` that answers from a JSON script, keyed by purpose and ordinal.

    Args:
        path: the script file; a relative path is found, once, here, as a
            task's relative tools file is: under the project root, then under
            each allowed directory (`ratchet.trust.code.project_path`).

    Raises:
        ScriptNotFound: the file is missing.
        InputError: the file is unreadable, not JSON, or not a valid script.
    """

    def __init__(self, path: str | Path) -> None:
        self.name = f"scripted:{path}"
        self.path = project_path(path)
        self.script = _load_script(self.path)
        self.priced_as = self.script.priced_as

    def __repr__(self) -> str:
        return f"ScriptedModel({str(self.path)!r})"

    async def complete(self, request: ModelRequest, *, ordinal: int) -> ModelResponse:
        """Answer with entry `ordinal` of the script's list for the request's purpose.

        Raises:
            ModelError: the entry is an error entry, or the purpose's list has no entry `ordinal`
                (not retryable: the script is too short for the task).
        """
        entry = await self._entry(request, ordinal)
        if entry.error is not None:
            raise self._error(request, ordinal, entry.error)
        return self._answer(request, ordinal, entry)

    async def complete_streaming(
        self, request: ModelRequest, *, ordinal: int, on_text: TextSink
    ) -> ModelResponse:
        """Answer as `complete` does, handing `on_text` the entry's pieces of text first.

        The pieces are the entry's ``chunks``, or its text ``content`` as one
        piece; ``chunk_delay`` is slept before each. An error entry sends its
        ``chunks``, then raises its error: a stream cut midway.

        Raises:
            ModelError: as `complete`, after the pieces an error entry carries.
        """
        entry = await self._entry(request, ordinal)
        for piece in entry.pieces:
            if entry.chunk_delay:
                await asyncio.sleep(entry.chunk_delay)
            await on_text(piece)
        if entry.error is not None:
            raise self._error(request, ordinal, entry.error)
        return self._answer(request, ordinal, entry)

    async def _entry(self, request: ModelRequest, ordinal: int) -> ScriptEntry:
        """Entry `ordinal` of the request's purpose, after its ``delay``."""
        if ordinal < 0:
            raise ValueError(f"ordinal must be 0 or more, not {ordinal}")
        entries = self.script.entries(request.purpose)
        if ordinal >= len(entries):
            raise self._exhausted(request, ordinal, len(entries))
        entry = entries[ordinal]
        if entry.delay:
            await asyncio.sleep(entry.delay)
        return entry

    def _error(self, request: ModelRequest, ordinal: int, error: ScriptedError) -> ModelError:
        return ModelError.from_status(
            error.status,
            error.message or f"scripted error at {request.purpose} entry {ordinal} of {self.path.name}",
            error.retry_after,
        )

    def _answer(self, request: ModelRequest, ordinal: int, entry: ScriptEntry) -> ModelResponse:
        calls = [
            ToolCall(id=call.id or f"call_{ordinal}_{index}", name=call.name, arguments=call.arguments)
            for index, call in enumerate(entry.tool_calls)
        ]
        return _respond(request, ordinal, entry.answer, calls, entry.usage)

    def _exhausted(self, request: ModelRequest, ordinal: int, length: int) -> ModelError:
        # An answer made up here (a "done", a passed check) would hide a script too short for its
        # task: the task would end as if the model had said so. Running out is the script's fault.
        purpose = request.purpose.value
        return ModelError(
            f"scripted model {self.path.name}: no {purpose} answer left for {purpose} request "
            f"{ordinal + 1} (ordinal {ordinal}): the script's {purpose!r} list has {length} "
            f"{'entry' if length == 1 else 'entries'}",
            status=None,
            retryable=False,
        )


def _respond(
    request: ModelRequest,
    ordinal: int,
    content: JsonValue,
    calls: list[ToolCall],
    usage: Usage | None,
) -> ModelResponse:
    if usage is None:
        answer: JsonValue = {
            "content": content,
            "tool_calls": [call.model_dump() for call in calls],
        }
        usage = Usage(
            prompt_tokens=sum(_text_length(m.get("content")) for m in request.messages) // 4,
            completion_tokens=_text_length(answer) // 4,
        )
    return ModelResponse(
        content=content,
        tool_calls=calls,
        usage=usage,
        ordinal=ordinal,
        # Made up the way a server would say them, so a test sees them on the call's span.
        response_id=f"scripted-{request.purpose}-{ordinal}",
        finish_reason="tool_calls" if calls else "stop",
    )


def _text_length(value: JsonValue) -> int:
    """The length of a value as it would travel: a string as is, anything else as JSON."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, sort_keys=True, separators=(",", ":")))


# --------------------------------------------------------------------------- loading

_PREFIX = "scripted:"


def portable_model(spec: str) -> str:
    """A model string as a task records it: a script's path relative to the project root when
    the file is under it, absolute otherwise (`portable_path`, as for tools files); any other
    model string as it is."""
    if not spec.startswith(_PREFIX) or not spec.removeprefix(_PREFIX):
        return spec
    return _PREFIX + portable_path(spec.removeprefix(_PREFIX))


def require_script(spec: str) -> None:
    """Check that the script a ``scripted:PATH`` model string names is here (found as
    `ScriptedModel` finds it); any other model string reads no file.

    Raises:
        ScriptNotFound: there is nothing at that path.
    """
    if spec.startswith(_PREFIX) and spec.removeprefix(_PREFIX):
        path = project_path(spec.removeprefix(_PREFIX))
        if not path.exists():  # one that is there but unreadable fails where it is read, as before
            raise _missing(path)


def _missing(path: Path) -> ScriptNotFound:
    return ScriptNotFound(f"scripted model: no script file at {path}")


def _load_script(path: Path) -> Script:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _missing(path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"scripted model: cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"scripted model: {path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            f"scripted model: {path} must hold a JSON object mapping {_PURPOSES} to lists of entries"
        )
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"scripted model: {path}: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    """The first problem of a validation error, in one line a person can act on."""
    errors = exc.errors()
    first = errors[0]
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    loc = first["loc"]
    if first["type"] == "extra_forbidden" and len(loc) == 1:
        return f"unknown purpose {loc[0]!r}; the known purposes are {_PURPOSES}{more}"
    message = first["msg"].removeprefix("Value error, ")
    return f"{_where(loc)}: {message}{more}"


def _where(loc: tuple[Any, ...]) -> str:
    """``('act', 1, 'tool_calls', 0, 'name')`` -> ``act[1].tool_calls[0].name``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text

"""Tools: plain functions a workflow or a model calls through the journal.

``@ratchet.tool`` turns a function into a `Tool`. Its arguments are validated
with a pydantic model built from the type hints; a parameter annotated
`ToolContext` receives the call's context (and its idempotency key) and is
hidden from the model. Declaring how the tool behaves under a crash is what
makes resuming safe:

- ``risk="read_only"`` or ``idempotent=True``: running it twice is harmless;
  only its result is journaled, and a call caught in flight simply runs again.
- a `ToolContext` parameter: the tool passes ``ctx.idempotency_key`` to the
  outside system, so a call caught in flight runs again with the same key.
- ``reconcile=fn``: ``fn(ctx)`` looks at the outside world and says whether the
  call caught in flight happened (`Reconciled`).
- none of these: a call caught in flight waits for a person
  (``waiting(in_doubt)``, settled by ``ratchet resolve``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from .errors import NonRetryableError
from .policy import RetryPolicy
from .records import RiskLevel
from .validation import problems

if TYPE_CHECKING:
    from .sessions import CallSession

__all__ = ["Reconciled", "Tool", "ToolContext", "tool"]


@dataclass(frozen=True)
class ToolContext:
    """What a tool knows about the call it serves.

    Attributes:
        task_id: the task making the call.
        seq: the call's place in the task's journal.
        attempt: 1 for the first try, 2 for the first retry ...
        idempotency_key: ``"{task_id}:{seq}"``, the same on every attempt and
            every resume; pass it to the outside system.
        step: the index of the task's current step, if any.
        workspace: the task's own directory.
        emit: ``await ctx.emit(message, **data)`` records a progress event.
        session: the session the task is bound to (a chat turn's, or an agent's with ``session=``), or None:
            ``ctx.session.state`` is its state as the call started, and
            ``await ctx.session.update(change)`` changes it, once per call
            even when the call runs again after a crash.
    """

    task_id: str
    seq: int
    attempt: int
    idempotency_key: str
    step: int | None = None
    workspace: Path | None = None
    emit: Callable[..., Awaitable[None]] = field(default=lambda *a, **k: _nothing(), repr=False)
    session: CallSession | None = field(default=None, repr=False)


async def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Reconciled:
    """A reconcile hook's verdict on a call caught in flight.

    Build it with `Reconciled.done(result)` (it happened; this is its result),
    `Reconciled.run_again()` (it did not happen; run it) or
    `Reconciled.ask_person()` (can't tell; wait for ``ratchet resolve``).
    """

    verdict: str
    result: JsonValue = None

    @classmethod
    def done(cls, result: JsonValue = None) -> Reconciled:
        return cls("done", result)

    @classmethod
    def run_again(cls) -> Reconciled:
        return cls("run_again")

    @classmethod
    def ask_person(cls) -> Reconciled:
        return cls("ask_person")


class Tool:
    """A callable the journal wraps; build one with `tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        risk: RiskLevel | str = RiskLevel.WRITE_LOCAL,
        idempotent: bool = False,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        reconcile: Callable[[ToolContext], Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.risk = RiskLevel(risk)
        self.idempotent = idempotent
        self.retry = retry
        self.timeout = timeout
        self.reconcile = reconcile
        self.description, described = _documented(fn)
        self.context_param, self.arguments = _arguments_model(fn, self.name, described)
        self._is_async = inspect.iscoroutinefunction(fn)

    def __repr__(self) -> str:
        return f"<Tool {self.name} risk={self.risk} idempotent={self.idempotent}>"

    @property
    def takes_key(self) -> bool:
        """Whether the tool receives its idempotency key (through a `ToolContext`)."""
        return self.context_param is not None

    @property
    def safe_to_repeat(self) -> bool:
        """Whether running it again after a crash is harmless (no intent row needed)."""
        return self.idempotent or self.risk is RiskLevel.READ_ONLY

    def schema(self) -> dict[str, Any]:
        """The tool as a model sees it: name, description, JSON schema of its arguments."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.arguments.model_json_schema(),
        }

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against the tool's signature.

        Raises:
            NonRetryableError: the arguments do not fit; the message says why.
        """
        try:
            # The model's own validator: `model_validate` is a Python call around it, and no more.
            parsed = self.arguments.__pydantic_validator__.validate_python(args)
        except ValidationError as exc:
            raise NonRetryableError(
                f"bad arguments for {self.name}: {problems(exc, whole='arguments')}"
            ) from None
        # Its fields, each as validated: the model forbids extra keys and has no private attributes, so
        # its ``__dict__`` holds exactly them (a copy: the caller adds the tool's context to it).
        return dict(parsed.__dict__)

    async def invoke(self, args: dict[str, Any], context: ToolContext | None) -> JsonValue:
        """Run the tool once and return its result as JSON-ready data.

        `context` may be None for a tool without a `ToolContext` parameter (`takes_key`): it would not see it.
        """
        kwargs = self.validate(args)
        if self.context_param is not None:
            if context is None:
                raise TypeError(f"tool {self.name} takes a ToolContext: invoke it with one")
            kwargs[self.context_param] = context
        try:
            if self._is_async:
                result = await self.fn(**kwargs)
            else:
                result = await asyncio.to_thread(self.fn, **kwargs)
        except SystemExit as exit_:
            # Out of an event loop it would stop the whole process, and every other task with it.
            raise NonRetryableError(
                f"tool {self.name} ended its program instead of raising an error: it exited "
                f"(SystemExit: {exit_.code})"
            ) from None
        jsonable: JsonValue = to_jsonable_python(result)
        return jsonable


# The docstring sections that describe arguments (not ``Attributes:``, also parsed as params).
_ARGUMENT_KEYS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword", "other_param"})


def _documented(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The tool's description and its arguments' descriptions, from its docstring.

    Google (``Args:``), NumPy (``Parameters`` underlined) and Sphinx
    (``:param name:``) styles are all read; the description is the docstring's
    text before its sections (``Returns:``, ``Raises:`` ... are left out).
    """
    doc = inspect.getdoc(fn)
    if not doc:
        return "", {}
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:  # a docstring in no style it knows: its text alone
        return doc.split("\n\n")[0], {}
    short, long = parsed.short_description or "", parsed.long_description or ""
    # A first paragraph wrapped over several lines is one sentence, not a summary and a body.
    joiner = "\n\n" if parsed.blank_after_short_description else " "
    description = joiner.join(part for part in (short, long) if part)
    arguments = {
        param.arg_name: " ".join(param.description.split())
        for param in parsed.params
        if param.args[0] in _ARGUMENT_KEYS and param.description
    }
    return description, arguments


def _bare(annotation: Any) -> Any:
    """The type under ``Annotated[...]`` metadata."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _describes(annotation: Any) -> bool:
    """Whether ``Annotated[..., Field(description=...)]`` already describes the argument."""
    if get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in get_args(annotation)[1:])


def _arguments_model(
    fn: Callable[..., Any], name: str, descriptions: dict[str, str]
) -> tuple[str | None, type[BaseModel]]:
    # include_extras keeps ``Annotated[int, Field(ge=1, le=10)]`` whole: without it the
    # constraints (and an Annotated description) are dropped and any int passes.
    hints = get_type_hints(fn, include_extras=True)
    context_param = None
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if _bare(annotation) is ToolContext:
            context_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs can't be described to a model")
        default = ... if param.default is param.empty else param.default
        # The annotation's own Field description wins over the docstring's.
        described = None if _describes(annotation) else descriptions.get(param.name)
        # description=None would count as given and blank an Annotated description.
        info = Field(default, description=described) if described else Field(default)
        fields[param.name] = (annotation, info)
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return context_param, model


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    risk: RiskLevel | str = RiskLevel.WRITE_LOCAL,
    idempotent: bool = False,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    reconcile: Callable[[ToolContext], Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    risk: RiskLevel | str = RiskLevel.WRITE_LOCAL,
    idempotent: bool = False,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    reconcile: Callable[[ToolContext], Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a `Tool`; use bare (``@tool``) or with options (``@tool(risk=...)``).

    Args:
        name: the name models and the journal use (default: the function's).
        risk: ``read_only``, ``write_local`` (default) or ``external_action``.
        idempotent: running it twice has the effect of running it once.
        retry: how failures are retried (default: the workflow's policy).
        timeout: seconds one attempt may take; past it the call is cancelled and the
            task fails (not retried: a call cut off may have half happened).
        reconcile: ``fn(ctx) -> Reconciled`` deciding about a call caught in flight.
    """

    def make(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name=name,
            risk=risk,
            idempotent=idempotent,
            retry=retry,
            timeout=timeout,
            reconcile=reconcile,
        )

    return make if fn is None else make(fn)

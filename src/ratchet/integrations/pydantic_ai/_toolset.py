"""A pydantic-ai toolset whose every tool call is one journaled Ratchet tool call.

`RatchetToolset` wraps each of the agent's toolsets for one run inside a
workflow. A call becomes an `AgentTool`, a `Tool` like any other: approvals,
the intent row, in-doubt rules, retries and events treat it by its risk
level, read from the tool's metadata (`tool_settings`). Its result is
journaled as JSON by pydantic-ai's own codec (``CallToolResult``), which
carries ``ModelRetry``, ``ToolFailed``, ``CallDeferred`` and
``ApprovalRequired`` as values, so a replay raises them again where the live
call did. While the tool runs, `tool_context` gives its `ToolContext` (the
idempotency key above all).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue, ValidationError
from pydantic_ai.durable_exec import JSON_CODEC, CallToolResult
from pydantic_ai.durable_exec._toolset import unwrap_tool_call_result, wrap_tool_call_result
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_ai.toolsets.wrapper import WrapperToolset
from pydantic_core import to_jsonable_python

from ...engine.calls.tool_serving import current_tool_call
from ...engine.context import Context
from ...errors import InputError, NonRetryableError, OperationFailed
from ...records import RiskLevel
from ...tools import Tool, ToolContext
from ._tracing import mark_span, pydantic_ai_reports, ran, reported_once

__all__ = ["METADATA_KEY", "AgentTool", "RatchetToolset", "ToolSettings", "tool_context", "tool_settings"]

# The key of a pydantic-ai tool's metadata that says how Ratchet treats it.
METADATA_KEY = "ratchet"


def tool_context() -> ToolContext:
    """The `ToolContext` of the journaled tool call running now (its ``idempotency_key`` above all).

    Call it from a pydantic-ai tool that a `RatchetAgent` runs inside a task.

    Raises:
        InputError: no journaled tool call is running here.
    """
    found = current_tool_call()
    if found is None:
        raise InputError("tool_context() is for a tool that a RatchetAgent runs inside a Ratchet task")
    return found


def in_tool_call() -> bool:
    """Whether a journaled tool's body runs here (its own calls are covered by its journal entry)."""
    return current_tool_call() is not None


@dataclass(frozen=True)
class ToolSettings:
    """How Ratchet treats a pydantic-ai tool, from ``metadata={"ratchet": {...}}``.

    Attributes:
        risk: ``read_only``, ``write_local`` (the default: a tool has side
            effects unless it says otherwise) or ``external_action`` (which
            waits for a person's approval under the default constraints).
        idempotent: running it twice has the effect of running it once.
        uses_key: the tool passes ``tool_context().idempotency_key`` to the
            outside system, so a call caught in flight by a crash runs again
            with the same key instead of waiting for a person.
    """

    risk: RiskLevel = RiskLevel.WRITE_LOCAL
    idempotent: bool = False
    uses_key: bool = False


def tool_settings(tool: ToolsetTool[Any]) -> ToolSettings:
    """The settings in the tool's metadata (``{"ratchet": {"risk": ..., ...}}``), else the defaults.

    Raises:
        InputError: the metadata names an unknown risk level or setting.
    """
    metadata = tool.tool_def.metadata or {}
    given = metadata.get(METADATA_KEY) or {}
    name = tool.tool_def.name
    if not isinstance(given, dict) or set(given) - {"risk", "idempotent", "uses_key"}:
        raise InputError(
            f"tool {name}: metadata[{METADATA_KEY!r}] takes risk, idempotent and uses_key, not {given!r}"
        )
    try:
        risk = RiskLevel(given.get("risk", RiskLevel.WRITE_LOCAL))
    except ValueError:
        levels = ", ".join(level.value for level in RiskLevel)
        raise InputError(f"tool {name}: risk {given['risk']!r} is none of {levels}") from None
    idempotent, uses_key = bool(given.get("idempotent", False)), bool(given.get("uses_key", False))
    return ToolSettings(risk=risk, idempotent=idempotent, uses_key=uses_key)


class AgentTool(Tool):
    """One call of a pydantic-ai tool, as the journal runs it.

    One per call: it holds the call's run context and its arguments as
    pydantic-ai validated them (`for_call` copies the first one made for the
    tool, as building a `Tool` costs a pydantic model). Arguments a person
    edited at an approval are validated again by the tool's own validator.
    """

    def __init__(
        self,
        toolset: AbstractToolset[Any],
        tool: ToolsetTool[Any],
        args: dict[str, Any],
        run_context: RunContext[Any],
    ) -> None:
        settings = tool_settings(tool)
        name, risk = tool.tool_def.name, settings.risk
        super().__init__(self._unused, name=name, risk=risk, idempotent=settings.idempotent)
        self.description = tool.tool_def.description or ""
        self.uses_key = settings.uses_key
        self._toolset = toolset
        self._tool = tool
        self._args = args
        self._run_context = run_context
        self.shown: dict[str, JsonValue] = to_jsonable_python(args)
        self.reported_by_pydantic_ai = pydantic_ai_reports(run_context)
        self.ran = False  # whether this call ran live here (else its result was replayed)

    def for_call(
        self, tool: ToolsetTool[Any], args: dict[str, Any], run_context: RunContext[Any]
    ) -> AgentTool:
        """This tool for another call of it."""
        call = copy.copy(self)
        call._tool, call._args, call._run_context = tool, args, run_context
        call.shown = to_jsonable_python(args)
        call.reported_by_pydantic_ai, call.ran = pydantic_ai_reports(run_context), False
        return call

    async def _unused(self) -> None:
        """Not called: `invoke` calls the toolset."""

    @property
    def takes_key(self) -> bool:
        return self.uses_key

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check arguments with the tool's own validator (pydantic-ai's).

        Raises:
            NonRetryableError: they do not fit; the message says why.
        """
        try:
            validated: dict[str, Any] = self._tool.args_validator.validate_python(args)
        except ValidationError as bad:
            raise NonRetryableError(f"bad arguments for {self.name}: {bad}") from None
        return validated

    async def invoke(self, args: dict[str, Any], context: ToolContext | None) -> JsonValue:
        self.ran = True
        if self.reported_by_pydantic_ai:
            _marked(self.name)
        arguments = self._args if args == self.shown else self.validate(args)
        result = await wrap_tool_call_result(
            self._toolset.call_tool(self.name, arguments, self._run_context, self._tool)
        )
        recorded: JsonValue = JSON_CODEC.dump(CallToolResult, result)
        return recorded


class RatchetToolset(WrapperToolset[Any]):
    """`wrapped` with each tool call journaled in the task of `context`."""

    def __init__(self, wrapped: AbstractToolset[Any], *, context: Context) -> None:
        super().__init__(wrapped)
        self._context = context
        self._made: dict[str, AgentTool] = {}  # the first call of each tool, copied for the next ones

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        made = self._made.get(name)
        if made is None or made._tool.tool_def != tool.tool_def:
            call = self._made[name] = AgentTool(self.wrapped, tool, tool_args, ctx)
        else:
            call = made.for_call(tool, tool_args, ctx)
        try:
            with reported_once(call.reported_by_pydantic_ai):
                recorded = await self._context.call_tool(call, call.shown)
        except OperationFailed as failed:
            if failed.error_type != "ApprovalDenied":
                raise
            raise ToolFailed(f"a person denied this call: {failed.error}") from None  # the model hears it
        finally:
            ran(call.ran)
        return _decoded(recorded)


def _marked(name: str) -> None:
    """A live attempt: its place in the journal on the span pydantic-ai opened for the tool call."""
    served = current_tool_call()
    if served is not None:
        mark_span(
            {
                "task.id": served.task_id,
                "op.seq": served.seq,
                "op.kind": "tool",
                "op.name": name,
                "op.attempt": served.attempt,
                "op.idempotency_key": served.idempotency_key,
            }
        )


def _decoded(recorded: JsonValue) -> Any:
    """What the tool returned, or the control flow it raised, read back from the journal.

    A result that is not in pydantic-ai's shape was given by a person settling a call
    in doubt (`ratchet resolve --result JSON`, or None for ``--skip``): it is the tool's return.
    """
    try:
        loaded = JSON_CODEC.load(CallToolResult, recorded)
    except ValidationError:
        return recorded
    return unwrap_tool_call_result(loaded)

"""What the pydantic-ai bridge's tests share: `FunctionModel`s scripted by history, and call counters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel


@dataclass
class Counts:
    """How many times the model and the tools really ran (a replay adds nothing)."""

    model: int = 0
    tools: list[dict[str, Any]] = field(default_factory=list)


def calling(tool: str, args: dict[str, Any], counts: Counts) -> FunctionModel:
    """A model that calls `tool` with `args` (again after a retry), then answers with what it returned."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        counts.model += 1
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.outcome == "success":
                return ModelResponse(parts=[TextPart(f"the tool said: {part.content}")])
            if isinstance(part, ToolReturnPart | RetryPromptPart) and "denied" in str(part.content):
                return ModelResponse(parts=[TextPart(f"the tool failed: {part.content}")])
        calls = sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"call-{calls}")])

    return FunctionModel(answer)


PIECES = ("The trip ", "is booked", ": flight ", "and hotel.")


def streaming(counts: Counts, pieces: tuple[str, ...] = PIECES, *, tool: str | None = None) -> FunctionModel:
    """A model that streams `pieces` as its answer (after calling `tool`, when given), as a provider would.

    Its plain `request` answers the same, whole: a run that does not stream gets the same answer.
    """

    def called(messages: list[ModelMessage]) -> bool:
        return tool is None or any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        counts.model += 1
        if not called(messages):
            yield {0: DeltaToolCall(name=tool, json_args="{}", tool_call_id="call-0")}
            return
        for piece in pieces:
            yield piece

    def whole(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        counts.model += 1
        if not called(messages):
            return ModelResponse(parts=[ToolCallPart(str(tool), {}, tool_call_id="call-0")])
        return ModelResponse(parts=[TextPart("".join(pieces))])

    return FunctionModel(whole, stream_function=stream)

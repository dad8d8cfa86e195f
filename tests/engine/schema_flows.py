"""Workflows for the tests of structured model answers and of tools passed as objects
(loaded by reference, ``tests.engine.schema_flows:NAME``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ratchet import Context
from ratchet.engine import workflow
from ratchet.tools import tool

from .flows import FAST, crash_once, record

SCHEMA_FLOWS = "tests.engine.schema_flows"


class Forecast(BaseModel):
    """What the model answers: a city's forecast."""

    city: str
    celsius: int = Field(ge=-90, le=60)


@workflow(tools=[crash_once], retry=FAST)
async def forecast(ctx: Context, ledger: str, max_repairs: int = 2) -> dict[str, Any]:
    """Asks the model for a `Forecast`, then makes an effect that crashes its first run."""
    answer = await ctx.call_model(
        {"purpose": "act", "messages": [{"role": "user", "content": "The weather in Paris?"}]},
        schema=Forecast,
        max_repairs=max_repairs,
    )
    assert isinstance(answer, Forecast)
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "after"})
    return answer.model_dump()


@tool(name="record", risk="read_only")
def unlisted(ledger: str, label: str) -> str:
    """Named like the workflow's `record` tool, but another tool."""
    return label


@tool(risk="read_only")
def shout(text: str) -> str:
    """A tool no workflow lists."""
    return text.upper()


@workflow(tools=[record], retry=FAST)
async def tool_objects(ctx: Context, ledger: str, clash: bool = False) -> list[Any]:
    """Calls tools given as objects: a listed one, one the workflow does not list, both at once."""
    if clash:
        return [await ctx.call_tool(unlisted, {"ledger": ledger, "label": "clash"})]
    first = await ctx.call_tool(record, {"ledger": ledger, "label": "one"})
    loud = await ctx.call_tool(shout, {"text": "hi"})
    both = await ctx.call_tools([(shout, {"text": "a"}), ("record", {"ledger": ledger, "label": "two"})])
    assert isinstance(first, dict) and isinstance(both[1], dict)
    return [first["label"], loud, both[0], both[1]["label"]]

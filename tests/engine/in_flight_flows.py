"""Workflows for the tests of a call stopped while its tool runs (``tests.engine.in_flight_flows:NAME``).

The tool writes its effect to the ledger, then waits until a gate file
exists, then answers as it is told: so a test stops the run while the tool
runs, opens the gate, and sees what the journal recorded.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ratchet import Context
from ratchet.engine import workflow
from ratchet.errors import NonRetryableError
from ratchet.tools import ToolContext, tool

from .flows import FAST, _write

IN_FLIGHT_FLOWS = "tests.engine.in_flight_flows"
PATIENCE = 60.0  # seconds a tool waits for its gate before it answers anyway


def _answer(outcome: str, attempt: int) -> str:
    if attempt > 1 or outcome == "returns":
        return "delivered"
    if outcome == "fails, retryable":
        raise ConnectionError("the line dropped")
    raise NonRetryableError("the carrier refused the parcel")


@tool(retry=FAST)
def deliver(ledger: str, gate: str, outcome: str, ctx: ToolContext) -> str:
    """Deliver (an effect), wait for the gate, then return or fail on the first attempt as `outcome` says."""
    _write(ledger, "deliver", attempt=ctx.attempt)
    began = time.monotonic()
    while not Path(gate).exists() and time.monotonic() - began < PATIENCE:
        time.sleep(0.01)
    return _answer(outcome, ctx.attempt)


@tool(retry=FAST)
async def deliver_async(ledger: str, gate: str, outcome: str, ctx: ToolContext) -> str:
    """`deliver`, written as a coroutine."""
    _write(ledger, "deliver", attempt=ctx.attempt)
    began = time.monotonic()
    while not Path(gate).exists() and time.monotonic() - began < PATIENCE:
        await asyncio.sleep(0.01)
    return _answer(outcome, ctx.attempt)


@workflow(tools=[deliver, deliver_async], retry=FAST)
async def delivers(ctx: Context, tool_name: str, ledger: str, gate: str, outcome: str) -> str:
    """One delivery with `tool_name`."""
    result = await ctx.call_tool(tool_name, {"ledger": ledger, "gate": gate, "outcome": outcome})
    return str(result)


@workflow(tools=[deliver, deliver_async], retry=FAST)
async def delivers_twice(ctx: Context, tool_name: str, ledger: str, gate: str, outcome: str) -> list[str]:
    """Two deliveries with `tool_name` at once (`ctx.call_tools`), then a third after them."""
    arguments = {"ledger": ledger, "gate": gate, "outcome": outcome}
    both = await ctx.call_tools([(tool_name, arguments), (tool_name, arguments)])
    third = await ctx.call_tool(tool_name, arguments)
    return [str(result) for result in [*both, third]]

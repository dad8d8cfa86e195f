"""Workflows for the retry tests (``tests.engine.retry_flows:NAME``): steps whose last call fails
until a gate file exists, and code that raises until it does."""

from __future__ import annotations

from pathlib import Path

from ratchet import Context
from ratchet.engine import workflow
from ratchet.errors import NonRetryableError
from ratchet.tools import tool

from .flows import ALL_TOOLS, FAST, _write

RETRY_FLOWS = "tests.engine.retry_flows"


@tool(retry=FAST)
async def ship(ledger: str, gate: str) -> str:
    """Ships, once the gate file exists; before that it fails for good at once."""
    _write(ledger, "ship")
    if not Path(gate).exists():
        raise NonRetryableError("the carrier refused the parcel")
    return "shipped"


@workflow(tools=[*ALL_TOOLS, ship], retry=FAST)
async def pack_and_ship(ctx: Context, ledger: str, gate: str) -> str:
    """Step 1 packs (an effect), step 2 labels (an effect) and ships (fails until the gate exists)."""
    async with ctx.step("pack"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "pack"})
    async with ctx.step("ship"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "label"})
        result = await ctx.call_tool("ship", {"ledger": ledger, "gate": gate})
    return str(result)


@workflow(tools=ALL_TOOLS, retry=FAST)
async def checks_after(ctx: Context, ledger: str, gate: str) -> str:
    """An effect, then code that raises until the gate exists (a bug, fixed by the time of the retry)."""
    async with ctx.step("pack"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "pack"})
    if not Path(gate).exists():
        raise ValueError("the address is missing")
    return "checked"

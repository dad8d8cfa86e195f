"""Workflows that trust a checkpoint for one second (``tests.engine.stale_flows:NAME``)."""

from __future__ import annotations

from ratchet import Context
from ratchet.engine import workflow
from ratchet.policy import CheckpointPolicy

from .flows import crash_once, record

STALE_FLOWS = "tests.engine.stale_flows"
MAX_AGE = 1.0

TRUSTS_ONE_SECOND = CheckpointPolicy(max_age=MAX_AGE)


@workflow(tools=[record, crash_once], checkpoint=TRUSTS_ONE_SECOND)
async def step_then_crash(ctx: Context, ledger: str) -> str:
    """One step (a checkpoint), then a call that "kills" its worker the first time."""
    async with ctx.step("before"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "before"})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return "done"


@workflow(tools=[record, crash_once], checkpoint=TRUSTS_ONE_SECOND)
async def crash_without_steps(ctx: Context, ledger: str) -> str:
    """A call, then one that "kills" its worker the first time; no step, so no checkpoint."""
    await ctx.call_tool("record", {"ledger": ledger, "label": "before"})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return "done"


@workflow(tools=[record], checkpoint=TRUSTS_ONE_SECOND)
async def one_step(ctx: Context, ledger: str) -> str:
    async with ctx.step("only"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "only"})
    return "done"

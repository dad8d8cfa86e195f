"""A workflow whose code changes between a crash and its resume (``tests.team.versioned_flows``).

`CODE` stands for the code a worker runs: version 1 knows nothing of the
receipt; version 2 sends one, under ``ctx.patched("send-receipt")``;
version 3, once no task runs version 1, always sends it (the call removed). The
in-process tests switch it between a crash and the resume, as a deploy would.
"""

from __future__ import annotations

from typing import Any

from ratchet.engine import workflow
from ratchet.engine.context import Context

from ..engine.flows import crash_once, other, record

FLOWS = "tests.team.versioned_flows"
CODE = {"version": 1}


@workflow(tools=[record, crash_once])
async def versioned(ctx: Context, ledger: str, crash_after: str) -> dict[str, Any]:
    """Record a, b and c, crashing once after `crash_after`; version 2 sends a receipt after a."""
    labels = ["a"]
    await ctx.call_tool("record", {"ledger": ledger, "label": "a"})
    if crash_after == "a":
        await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    version = CODE["version"]
    if version >= 3 or (version == 2 and await ctx.patched("send-receipt")):
        await ctx.call_tool("record", {"ledger": ledger, "label": "receipt"})
        labels.append("receipt")
    await ctx.call_tool("record", {"ledger": ledger, "label": "b"})
    labels.append("b")
    if crash_after == "b":
        await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    await ctx.call_tool("record", {"ledger": ledger, "label": "c"})
    return {"labels": [*labels, "c"]}


@workflow(tools=[record, other, crash_once])
async def rewritten(ctx: Context, ledger: str) -> str:
    """Version 1 records a then b; version 2 calls `other` instead of b, with no patch."""
    await ctx.call_tool("record", {"ledger": ledger, "label": "a"})
    if CODE["version"] >= 2:
        await ctx.call_tool("other", {"ledger": ledger, "label": "d"})
    else:
        await ctx.call_tool("record", {"ledger": ledger, "label": "b"})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return "done"

"""Workflows that receive messages, for the message tests (``tests.engine.message_flows:NAME``)."""

from __future__ import annotations

from typing import Any

from ratchet.engine import Context, workflow
from ratchet.tools import ToolContext, tool

from .flows import _write


@tool(idempotent=True)
def log_item(ctx: ToolContext, ledger: str, item: Any) -> str:
    """Record a received item in the ledger (what the workflow did with each message)."""
    _write(ledger, "item", item=item, key=ctx.idempotency_key)
    return "logged"


@workflow(tools=[log_item])
async def collector(ctx: Context, count: int = 2, ledger: str = "") -> list[Any]:
    """Receive `count` messages named ``item``, logging each one before the next receive."""
    received = []
    for _ in range(count):
        item = await ctx.receive("item")
        if ledger:
            await ctx.call_tool("log_item", {"ledger": ledger, "item": item})
        received.append(item)
    return received


@workflow
async def patient(ctx: Context, timeout: float = 0.5) -> str:
    """Receive one ``answer`` within `timeout` seconds, or say it timed out."""
    try:
        return str(await ctx.receive("answer", timeout=timeout))
    except TimeoutError as late:  # a ReceiveTimeout is one
        return f"timed out ({type(late).__name__}): {late}"


@workflow
async def browser(ctx: Context) -> list[Any]:
    """Take the ``note`` messages already sent without waiting, twice, around a clock read."""
    first = await ctx.take_messages("note")
    await ctx.now()
    return [first, await ctx.take_messages("note")]


@workflow
async def quick(ctx: Context) -> str:
    return "done"

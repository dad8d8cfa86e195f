"""Workflows for the tests of a task's stream (loaded by reference, ``tests.engine.stream_flows:NAME``)."""

from __future__ import annotations

from typing import Any

from ratchet import Context
from ratchet.engine import workflow
from ratchet.errors import InputError

from .flows import FAST, crash_once

STREAM_FLOWS = "tests.engine.stream_flows"

ASK = {"purpose": "act", "messages": [{"role": "user", "content": "Tell me a story."}]}


@workflow(retry=FAST)
async def tell(ctx: Context, quiet: bool = False) -> Any:
    """One model call, streamed unless `quiet`; returns the answer's content."""
    ctx.streaming = not quiet
    answer = await ctx.call_model(ASK)
    return answer.content


@workflow(retry=FAST)
async def tell_twice(ctx: Context) -> list[Any]:
    """Two model calls, one after the other, each streamed; returns both answers."""
    first = await ctx.call_model(ASK)
    second = await ctx.call_model(ASK)
    return [first.content, second.content]


@workflow(tools=[crash_once], retry=FAST)
async def noted(ctx: Context, ledger: str = "") -> Any:
    """Writes a value, streams a model call, writes another; with a `ledger`, its first run
    "dies" (`Crash`) after the model call, so a resume replays the first value and the call."""
    await ctx.write_stream("phase", {"at": "start"})
    answer = await ctx.call_model(ASK)
    if ledger:
        await ctx.call_tool("crash_once", {"ledger": ledger, "label": "after the model"})
    await ctx.write_stream("phase", {"at": "end"})
    return answer.content


@workflow
async def refused(ctx: Context) -> list[str]:
    """Writes a value with no key, and one that is not JSON; returns what each was told."""
    said: list[str] = []
    for key, value in (("", 1), ("k", {1, 2})):
        try:
            await ctx.write_stream(key, value)  # type: ignore[arg-type]  # wrong on purpose
        except InputError as error:
            said.append(str(error))
    return said

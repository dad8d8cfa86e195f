"""Workflows for the shared limits' tests (``tests.engine.limited_flows:NAME``), run here and by workers.

`ask` makes model calls (of the task's model: point it at a
`tests.helpers.limited_server.LimitedServer`); `hold` makes one tool call
that sleeps, so the journal's times of that call tell when the task ran;
`hold_once` sleeps long only the first time (a file marks it), so a task
whose worker is killed mid-call is quick once another takes it over.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ratchet import Context
from ratchet.engine import workflow
from ratchet.policy import RetryPolicy
from ratchet.tools import tool

HERE = "tests.engine.limited_flows"
PATIENT = RetryPolicy(initial_interval=0.05, maximum_attempts=8)
ONCE = RetryPolicy(maximum_attempts=1)


@tool(idempotent=True)
async def pause(seconds: float) -> float:
    """Sleep `seconds`; return them."""
    await asyncio.sleep(seconds)
    return seconds


@tool(idempotent=True)
async def pause_once(marker: str, seconds: float) -> float:
    """Sleep `seconds` the first time (marking it in the file `marker`), not again."""
    if Path(marker).exists():
        return 0.0
    Path(marker).write_text("held\n")
    await asyncio.sleep(seconds)
    return seconds


async def _ask(ctx: Context, prompt: str, times: int) -> str:
    answers = []
    for n in range(times):
        request = {"purpose": "act", "messages": [{"role": "user", "content": f"{prompt} {n}"}]}
        answers.append(str((await ctx.call_model(request)).content))
    return " ".join(answers)


@workflow(retry=PATIENT)
async def ask(ctx: Context, prompt: str, times: int = 1) -> str:
    """Ask the task's model `times` times; retries a failed call (a 429) as its policy says."""
    return await _ask(ctx, prompt, times)


@workflow(retry=ONCE)
async def ask_once(ctx: Context, prompt: str) -> str:
    """Ask the task's model once; a failed call is not retried."""
    return await _ask(ctx, prompt, 1)


@workflow(tools=[pause])
async def hold(ctx: Context, seconds: float) -> float:
    """One tool call that sleeps `seconds`."""
    held = await ctx.call_tool("pause", {"seconds": seconds})
    assert isinstance(held, int | float)
    return float(held)


@workflow(tools=[pause_once])
async def hold_once(ctx: Context, marker: str, seconds: float) -> float:
    """One tool call that sleeps `seconds` the first time only."""
    held = await ctx.call_tool("pause_once", {"marker": marker, "seconds": seconds})
    assert isinstance(held, int | float)
    return float(held)

"""Workflows for the tests of fallback chains and spend caps (loaded by reference,
``tests.engine.fallback_flows:NAME``)."""

from __future__ import annotations

from typing import Any

from ratchet import Context
from ratchet.engine import workflow

from .flows import FAST, crash_once

FALLBACK_FLOWS = "tests.engine.fallback_flows"


@workflow(tools=[crash_once], retry=FAST)
async def ask_then_crash(ctx: Context, ledger: str) -> Any:
    """Asks the task's model once, then makes an effect that crashes its first run."""
    answer = await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": "hello?"}]})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "after"})
    return answer.content


@workflow(retry=FAST)
async def ask(ctx: Context, times: int = 2) -> list[Any]:
    """Asks the task's model `times` times; returns the answers."""
    answers = []
    for turn in range(times):
        message = {"role": "user", "content": f"turn {turn}"}
        answers.append((await ctx.call_model({"purpose": "act", "messages": [message]})).content)
    return answers


@workflow(retry=FAST)
async def ask_too(ctx: Context, times: int = 1) -> list[Any]:
    """`ask` under another name: a task of another agent."""
    answers = []
    for turn in range(times):
        message = {"role": "user", "content": f"turn {turn}"}
        answers.append((await ctx.call_model({"purpose": "act", "messages": [message]})).content)
    return answers

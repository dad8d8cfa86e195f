"""A workflow whose model calls go to two models, one per role (``tests.team.role_flows``)."""

from __future__ import annotations

from typing import Any

from ratchet.engine import workflow
from ratchet.engine.context import Context

from ..engine.flows import crash_once

FLOWS = "tests.team.role_flows"


def ask(text: str) -> dict[str, Any]:
    return {"purpose": "act", "messages": [{"role": "user", "content": text}]}


@workflow(tools=[crash_once])
async def two_roles(ctx: Context, architect: str, coder: str, ledger: str) -> dict[str, Any]:
    """The architect plans, the coder writes two modules; the worker 'dies' once at the end."""
    plan = await ctx.call_model(ask("plan the modules"), model=architect)
    first = await ctx.call_model(ask("write module a"), model=coder)
    second = await ctx.call_model(ask("write module b"), model=coder)
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    own = await ctx.call_model(ask("sum up")) if ctx.task.model else None
    return {
        "plan": plan.content,
        "code": [first.content, second.content],
        "own": None if own is None else own.content,
    }

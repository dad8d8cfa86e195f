"""Workflows whose model requests grow turn by turn, with and without a compaction middleware."""

from __future__ import annotations

from typing import Any

from ratchet.engine import Context, workflow
from ratchet.engine.calls.compaction import Compaction

COMPACTION = Compaction(token_budget=200, keep_recent=2)
PART = "x" * 300


async def _converse(ctx: Context, turns: int, pause_after: int | None) -> int:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You read logs."},
        {"role": "user", "content": "Read the logs, part by part."},
    ]
    for turn in range(turns):
        await ctx.call_model({"purpose": "act", "messages": messages})
        messages += [
            {"role": "assistant", "content": f"reading part {turn}"},
            {"role": "user", "content": f"part {turn}: {PART}"},
        ]
        if turn == pause_after:
            await ctx.sleep(0.2)  # the task waits; the resumed run replays what came before
    return len(messages)


@workflow(middleware=[COMPACTION])
async def compacted(ctx: Context, turns: int = 6, pause_after: int | None = None) -> int:
    """Its requests are compacted; it returns how many messages its own history holds."""
    return await _converse(ctx, turns, pause_after)


@workflow
async def whole(ctx: Context, turns: int = 6) -> int:
    """No compaction: every request carries the whole history."""
    return await _converse(ctx, turns, None)

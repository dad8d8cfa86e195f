"""The scaling benches' workload: a task that makes K journaled calls of a no-op tool with side effects.

Its own module so that `ratchet worker` processes load it by name (they are
started in bench/, their project root). `tree` starts children, for
bench/shard_prototype.py: a child is made by its parent's worker in its
parent's store, so a tree stays on the primary its root was routed to.
"""

from __future__ import annotations

import ratchet

PAYLOAD = {"request": "noop", "target": "service-a", "note": "x" * 40}


@ratchet.tool(risk="write_local")
async def noop(request: str, target: str, note: str) -> dict:
    """Do nothing, with side effects as far as the journal knows (an intent and a result committed)."""
    return {"ok": True}


@ratchet.workflow(tools=[noop])
async def calls(ctx: ratchet.Context, count: int) -> int:
    """Make `count` journaled calls; return how many."""
    for _ in range(count):
        await ctx.call_tool("noop", PAYLOAD)
    return count


@ratchet.workflow(tools=[noop])
async def tree(ctx: ratchet.Context, count: int, children: int) -> int:
    """Make `count` calls, then run `children` children of `calls` (each `count` calls); return all calls."""
    for _ in range(count):
        await ctx.call_tool("noop", PAYLOAD)
    done = await ctx.run_children([ratchet.Child(calls, {"count": count}) for _ in range(children)])
    return count + sum(int(str(n)) for n in done)

"""Tools that keep notes in the session their agent is bound to (``ctx.session``)."""

from __future__ import annotations

from typing import Any

import ratchet
from ratchet import ToolContext


@ratchet.tool(risk="write_local")
async def note_down(key: str, value: str, ctx: ToolContext) -> str:
    """Keep a note in the session, under `key`."""
    assert ctx.session is not None, "the agent is bound to no session"

    def add(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "notes": {**dict(state.get("notes") or {}), key: value}}

    await ctx.session.update(add)
    return f"noted {key}"


@ratchet.tool(risk="read_only")
async def look_up(key: str, ctx: ToolContext) -> str:
    """Read a note the session keeps."""
    assert ctx.session is not None, "the agent is bound to no session"
    return str(dict(ctx.session.state.get("notes") or {}).get(key, "no such note"))

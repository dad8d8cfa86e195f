"""A user's own tools for the chat (``ratchet chat --tools``): they keep notes in the session.

`note` changes the session through ``ctx.session.update`` and appends one
line per raw run to the file ``$CHAT_TOOL_LOG`` (when set), so a test sees
how many times it ran and how many times its change was applied.
"""

from __future__ import annotations

import os
from pathlib import Path

from ratchet import ToolContext, tool, workflow
from ratchet.engine import Context
from ratchet.records import RiskLevel

LOG_VARIABLE = "CHAT_TOOL_LOG"


@tool
async def note(text: str, ctx: ToolContext) -> str:
    """Keep a note in the user's session.

    Args:
        text: the note.
    """
    assert ctx.session is not None, "a chat tool runs in a session"
    before = len(ctx.session.state.get("notes", []))
    state = await ctx.session.update(lambda s: {**s, "notes": [*s.get("notes", []), text]})
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with Path(log).open("a", encoding="utf-8") as file:
            file.write(f"{ctx.idempotency_key}\n")
    return f"noted ({before} before, {len(state['notes'])} now)"


@tool(risk=RiskLevel.READ_ONLY)
async def session_probe(ctx: ToolContext) -> str:
    """Say whether the call reaches a session."""
    return "no session" if ctx.session is None else f"session {ctx.session.id}"


@workflow(tools=[session_probe])
async def probe(ctx: Context) -> object:
    """A workflow bound to no session: its tools get ``ctx.session`` None."""
    return await ctx.call_tool("session_probe")


def tool_runs(log: Path) -> list[str]:
    """The keys of `note`'s raw runs, in order."""
    return log.read_text(encoding="utf-8").split() if log.exists() else []

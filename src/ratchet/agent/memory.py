"""An agent's memory across tasks: the session it is bound to (``Agent(session="architect")``).

A session keeps, in its state, the exchanges of the tasks that ran on it
(``history``: ``{"user": instruction, "assistant": result, "task_id": ...}``,
oldest first, the newest `MAX_EXCHANGES` kept), the same shape a chat
session keeps, so a chat and an agent can share one session.

A task of an agent bound to a session:

1. reads the session's history as it starts, with one journaled read-only
   call (``session_history``), so a resumed task rebuilds the very same
   prompts;
2. sends those exchanges to the planner as earlier messages of the
   conversation (the compaction summarizes the older ones when the request
   passes its token budget), and lists the newest in every act prompt,
   within `ACT_MEMORY_BYTES`;
3. runs its tools bound to the session: ``ctx.session`` reads and updates its
   state, each update applied once per call;
4. when it completes, appends its own exchange with one journaled call
   (``session_remember``), applied once even if the call runs again after a
   crash. A task that fails or is cancelled records nothing.

Two tasks on one session at once each see the exchanges recorded before
they started; each appends its own atomically (`update_session_state`),
so neither's write is lost, in the order they complete.
"""

from __future__ import annotations

from typing import Any

from ..records import RiskLevel
from ..tools import Tool, ToolContext, tool

__all__ = [
    "ACT_MEMORY_BYTES",
    "ENTRY_CHARS",
    "MAX_EXCHANGES",
    "exchanges_of",
    "memory_messages",
    "memory_text",
    "session_history",
    "session_remember",
]

MAX_EXCHANGES = 20
"""How many exchanges a session keeps (the newest), as a chat session does."""
ENTRY_CHARS = 2000
"""How much of each earlier instruction and result the planner's messages carry."""
ACT_MEMORY_BYTES = 1500
"""How many bytes of earlier exchanges an act prompt carries at most (the newest that fit)."""
_LINE_CHARS = 240


def exchanges_of(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The exchanges a session state keeps, oldest first (malformed entries left out)."""
    history = state.get("history")
    if not isinstance(history, list):
        return []
    return [dict(h) for h in history if isinstance(h, dict) and "user" in h and "assistant" in h]


def _cut(text: Any, limit: int) -> str:
    said = text if isinstance(text, str) else str(text)
    return said if len(said) <= limit else said[: limit - 3] + "..."


def memory_messages(exchanges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The earlier exchanges as conversation messages (user, assistant, ...), each cut to `ENTRY_CHARS`."""
    messages: list[dict[str, Any]] = []
    for exchange in exchanges:
        messages.append({"role": "user", "content": _cut(exchange["user"], ENTRY_CHARS)})
        messages.append({"role": "assistant", "content": _cut(exchange["assistant"], ENTRY_CHARS)})
    return messages


def memory_text(exchanges: list[dict[str, Any]], max_bytes: int = ACT_MEMORY_BYTES) -> str:
    """The newest earlier exchanges as prompt lines, oldest of them first, within `max_bytes`."""
    heading = "Earlier tasks in this session (oldest first):\n"
    lines: list[str] = []
    used = len(heading.encode("utf-8"))
    for exchange in reversed(exchanges):
        line = (
            f"- asked: {_cut(' '.join(str(exchange['user']).split()), _LINE_CHARS)}"
            f" -> result: {_cut(' '.join(str(exchange['assistant']).split()), _LINE_CHARS)}\n"
        )
        cost = len(line.encode("utf-8"))
        if used + cost > max_bytes:
            break
        lines.insert(0, line)
        used += cost
    return heading + "".join(lines) if lines else ""


@tool(name="session_history", risk=RiskLevel.READ_ONLY)
async def session_history(ctx: ToolContext) -> list[dict[str, Any]]:
    """The exchanges the task's session keeps, as the task starts."""
    assert ctx.session is not None  # the agent binds the run to its session first
    return exchanges_of(ctx.session.state)


@tool(name="session_remember", idempotent=True)
async def session_remember(ctx: ToolContext, user: str, assistant: str) -> int:
    """Append the task's exchange to its session's history; returns how many the session keeps."""
    assert ctx.session is not None
    task_id = ctx.task_id

    def append(state: dict[str, Any]) -> dict[str, Any]:
        kept = [*exchanges_of(state), {"user": user, "assistant": assistant, "task_id": task_id}]
        return {**state, "history": kept[-MAX_EXCHANGES:]}

    return len(exchanges_of(await ctx.session.update(append)))


MEMORY_TOOLS: tuple[Tool, ...] = (session_history, session_remember)

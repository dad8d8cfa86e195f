"""Which tool's body runs in this asyncio task, for code that is handed no ``ToolContext``.

`perform` sets it around each live tool call. Code in a tool's body must not
make journaled calls of its own: a replay of the tool does not run its body,
so they would take seqs only the live run takes. A library that would (the
pydantic-ai bridge's ``RatchetAgent.run``) asks `current_tool_call` and runs
plainly instead; a pydantic-ai tool reads its idempotency key from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..tools import ToolContext

__all__ = ["current_tool_call", "serving_tool"]

_TOOL: ContextVar[ToolContext | None] = ContextVar("ratchet_current_tool_call", default=None)


def current_tool_call() -> ToolContext | None:
    """The `ToolContext` of the tool whose body runs here, or None outside a tool's body."""
    return _TOOL.get()


@contextmanager
def serving_tool(context: ToolContext) -> Iterator[None]:
    """Run a tool's body with `context` as the current tool call."""
    token = _TOOL.set(context)
    try:
        yield
    finally:
        _TOOL.reset(token)

"""The context of the workflow running in this asyncio task, for code that is handed no ``ctx``.

A library called from a workflow (``RatchetAgent.run`` of the pydantic-ai
integration) finds its task's context here: the runner sets it around the
workflow function, so it is seen by that function and everything it awaits
or starts, and by nothing else (engine/calls/tool_serving.py says which tool's
body runs, if any).
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .context import Context

__all__ = ["current_context", "running_in"]

T = TypeVar("T")

_CURRENT: ContextVar[Context | None] = ContextVar("ratchet_current_context", default=None)


def current_context() -> Context | None:
    """The context of the workflow this code runs in, or None outside any workflow."""
    return _CURRENT.get()


async def running_in(context: Context, work: Awaitable[T]) -> T:
    """Await `work` (a workflow function's coroutine) with `context` as the current context."""
    token = _CURRENT.set(context)
    try:
        return await work
    finally:
        _CURRENT.reset(token)

"""Which tool's body runs in this asyncio task, for code that is handed no ``ToolContext``.

`perform` sets it around each live tool call. Code in a tool's body must not
make journaled calls of its own: a replay of the tool does not run its body,
so they would take seqs only the live run takes. A library that would (the
pydantic-ai bridge's ``RatchetAgent.run``) asks `current_tool_call` and runs
plainly instead; a pydantic-ai tool reads its idempotency key from it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar, Token

from ...tools import ToolContext
from .call import Call

__all__ = ["current_tool_call", "serving_tool"]


class _Serving:
    """The call whose tool body runs, and its `ToolContext` once someone needed it."""

    __slots__ = ("call", "context")

    def __init__(self, call: Call, context: ToolContext | None) -> None:
        self.call, self.context = call, context


_TOOL: ContextVar[_Serving | None] = ContextVar("ratchet_current_tool_call", default=None)


def current_tool_call() -> ToolContext | None:
    """The `ToolContext` of the tool whose body runs here, or None outside a tool's body."""
    serving = _TOOL.get()
    if serving is None:
        return None
    if serving.context is None:  # a tool without a ToolContext parameter: none was built for it
        serving.context = serving.call.context.tool_context(serving.call)
    return serving.context


def serving_tool(call: Call, context: ToolContext | None) -> AbstractContextManager[None]:
    """Run `call`'s tool body as the current tool call (`context`: its ToolContext, if built)."""
    return _ServingBlock(_Serving(call, context))


class _ServingBlock:
    """`serving_tool`'s block. A class, not a `contextlib.contextmanager`: it is entered around
    every live tool call, and a generator's context manager costs ~2 µs more."""

    __slots__ = ("_serving", "_token")
    _token: Token[_Serving | None]

    def __init__(self, serving: _Serving) -> None:
        self._serving = serving

    def __enter__(self) -> None:
        self._token = _TOOL.set(self._serving)

    def __exit__(self, *exc_info: object) -> None:
        _TOOL.reset(self._token)

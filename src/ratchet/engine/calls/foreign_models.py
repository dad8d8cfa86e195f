"""Model requests made by another library's model, journaled like ``ctx.call_model``'s.

An integration (``ratchet.integrations.pydantic_ai``) keeps its own model
objects and message types; Ratchet's providers and `ModelRequest` never see
them. ``ctx.call_foreign_model(name, request, run)`` gives such a request a
seq and sends it through the same middleware chain (budget, journal, retry,
events): ``run(call)`` makes the request and returns its answer as JSON, which
the journal records; a replay returns that JSON and never calls `run`. `run`
may put the answer's usage in ``call.meta["usage"]`` (``prompt_tokens``,
``completion_tokens``, ``cost``), which the budget counts, replays included,
and the spend caps count once (`ratchet.engine.spend_caps`), which also hold a
live request as they hold any model call.
`ForeignModelCalls` is part of `Context`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pydantic import JsonValue

from ...records import OpKind
from .call import Call, CallContext

__all__ = ["ForeignModelCalls"]


class _ChainOwner(CallContext, Protocol):
    """What of the context a foreign model call uses."""

    _chain: Callable[[Call], Awaitable[JsonValue]]

    @property
    def workflow(self) -> Any: ...

    def _take_seq(self, count: int = 1) -> int: ...

    def _step_meta(self) -> dict[str, Any]: ...

    async def _before_live_model(self, call: Call) -> None: ...


class ForeignModelCalls:
    """``ctx.call_foreign_model``: a model request whose code is not a Ratchet provider."""

    async def call_foreign_model(
        self: _ChainOwner,
        name: str,
        request: JsonValue,
        run: Callable[[Call], Awaitable[JsonValue]],
        *,
        model: str | None = None,
    ) -> JsonValue:
        """Make one journaled model request with `run` (replayed on resume); returns its JSON answer.

        Args:
            name: the operation's name (``model:...``); a resume checks it as it checks any call's.
            request: what the journal shows as the request (JSON, for people; not compared on replay).
            run: ``await run(call)`` makes the request live and returns the answer as JSON.
            model: the ``provider:name`` the request goes to: its span names it, and the
                rate limits of its keys hold it as they hold ``ctx.call_model``'s.

        Raises:
            OperationFailed: the request failed for good (after the workflow's retries).
        """
        call = Call(
            context=self,
            kind=OpKind.MODEL,
            name=name,
            seq=self._take_seq(),
            input=request,
            retry=self.workflow.retry,
            run=run,
            model=model,
            meta=self._step_meta(),
        )
        if not call.will_replay:
            await self._before_live_model(call)  # the spend caps, as for ctx.call_model
        return await self._chain(call)

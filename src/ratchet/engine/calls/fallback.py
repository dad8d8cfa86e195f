"""Fallback chains: the task's next model, when the one in use fails for good or the budget presses.

A task may name its model as a chain (``--model A --model B``,
``Agent(model=[A, B])``): ``Task.model`` is the first, ``Task.fallback_models``
the rest. A call to the model in use that fails for good, its retries spent,
with an error the next model may well not meet, is made again to the next
model of the chain: a new journaled call whose input names that model. The
task then stays on it for its later calls (it does not go back to a model that
failed), and a ``model_fallback`` event says from which model to which, and
why, committed with the new call's record.

Which failures fall back (`falls_back`): a provider error with no HTTP answer
(a timeout, a refused connection), 408, 429 or any 5xx, all after the call's
retries; and 401, 403 and 404, which fault the model or its key, not the
request. A 400 or another 4xx (the request itself: the next model would refuse
it too), a prompt too long for the model's context, an answer that is not the
JSON asked for (`MalformedAnswer`, repaired instead), a tool's failure and a
budget or deadline do not.

With ``fallback_on_pressure`` the task also moves to the chain's next model,
once, when its budget is 80 % used (`ratchet.engine.budget`), before its next
live call.

Every choice is journaled: a replay reads which model each recorded call
went to from the call's input, and a failed call replays as failed, so a
resumed task takes the same path and never calls the failed model again.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from pydantic import JsonValue

from ...errors import OperationFailed
from ...records import Event, Operation, Severity
from .call import Call

if TYPE_CHECKING:  # the providers are imported when a task first calls its model
    from ...providers import ModelResponse

__all__ = ["MODEL_ERROR_META", "FallbackChain", "falls_back", "noting_error"]

# The operation's meta key holding what a failed model call's provider error said: its HTTP
# status and whether it was retryable, so a replay decides on a fallback as the first run did.
MODEL_ERROR_META = "model_error"

# Statuses that fault the model or its key, not the request: another model may well answer.
_MODEL_FAULTS = frozenset({401, 403, 404})


async def noting_error(call: Call, answer: Awaitable[ModelResponse]) -> ModelResponse:
    """The provider's `answer` (streamed or not); its error's status is noted in the call's meta first."""
    call.meta.pop(MODEL_ERROR_META, None)
    try:
        return await answer
    except Exception as error:
        from ...providers import MalformedAnswer, ModelError

        if isinstance(error, ModelError) and not isinstance(error, MalformedAnswer):
            call.meta[MODEL_ERROR_META] = {"status": error.status, "retryable": error.retryable}
        raise


def falls_back(meta: dict[str, JsonValue]) -> str | None:
    """Why a call that failed for good, with this meta, goes to the next model; None: it does not."""
    noted = meta.get(MODEL_ERROR_META)
    if not isinstance(noted, dict):
        return None  # not a provider error (a tool's, a malformed answer, a stop)
    status, retryable = noted.get("status"), noted.get("retryable")
    if status is None and retryable:
        return "the provider did not answer"
    if isinstance(status, int) and (retryable or status in _MODEL_FAULTS):
        return f"HTTP {status}"
    return None


class FallbackChain:
    """Where a task is in its chain of models; moved on by failures and budget pressure.

    Args:
        task_id: the task whose chain it is.
        models: the task's model, then its fallback models.
        on_pressure: move to the next model once the budget presses.
    """

    def __init__(self, task_id: str, models: list[str], *, on_pressure: bool) -> None:
        self.task_id = task_id
        self.models = models
        self.on_pressure = on_pressure
        self.at = 0

    @property
    def active(self) -> bool:
        """Whether there is a model to fall back to at all."""
        return len(self.models) > 1

    @property
    def model(self) -> str | None:
        """The model calls go to now: None while it is the task's own (recorded as any call to it)."""
        return None if self.at == 0 else self.models[self.at]

    def follow(self, recorded: Operation) -> None:
        """Take the model a recorded call went to as the one in use (a replay retraces the path)."""
        named = recorded.input.get("model") if isinstance(recorded.input, dict) else None
        at = 0 if named is None else self.models.index(named) if named in self.models else None
        if at is not None and at > self.at:
            self.at = at

    def pressed(self, pressure: bool) -> Event | None:
        """Move on once for budget pressure (if asked for); the event that says so, or None."""
        if not (self.on_pressure and pressure and self.at == 0 and self.active):
            return None
        return self._move("the task's budget is 80 % used (fallback_on_pressure)", "budget_pressure")

    def failed(self, call: Call, failure: OperationFailed) -> Event | None:
        """Move on after `call` failed for good, if its failure falls back; the event, or None."""
        why = falls_back(call.meta)
        if why is None or self.at + 1 >= len(self.models):
            return None
        return self._move(f"call {call.seq} failed for good ({why}: {failure.error})", "error")

    def _move(self, why: str, reason: str) -> Event:
        was = self.models[self.at]
        self.at += 1
        now = self.models[self.at]
        return Event(
            task_id=self.task_id,
            kind="model_fallback",
            severity=Severity.WARNING,
            message=f"model {was} -> {now}: {why}",
            data={"from": was, "to": now, "reason": reason, "why": why},
        )

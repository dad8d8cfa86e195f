"""Step timeouts of the agent: an attempt at a step that runs too long fails, alike on every replay.

An attempt's deadline is its start, read from the journaled clock
(``ctx.now()``), plus the agent's ``step_timeout``: a resumed task computes
the same deadline. The attempt is cut at a call boundary, never between two
replayed calls. `StepDeadline`, a middleware of the agent's workflow, looks
at each model or tool call an attempt makes:

- a call the journal holds a result for replays as usual, and one recorded
  as cut by the timeout raises it again: a replay ends the attempt exactly
  where the first run did;
- a live call once the deadline has passed does not start: it is recorded
  as failed (``StepTimedOut``), and the attempt ends;
- a live call before the deadline runs for the time left at most; cut short,
  it is recorded the same way. Like a tool's own ``timeout``, a call cut
  short is recorded as failed whether or not its effect happened (give a
  tool with side effects the idempotency key);
- a call in doubt (its intent recorded, no result: its worker died during
  it) is settled as any other, with no deadline: a timeout never turns a
  call that may have happened into one that did not.

`attempt_within` runs one attempt under its deadline and returns its report,
or why it timed out; the loop treats a timeout as a failed check: the step
is tried again, then replanned, then failed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import NoReturn, TypeVar

from pydantic import JsonValue

from ..engine.calls import Call
from ..engine.calls.in_flight import bounded
from ..engine.calls.middleware import Proceed
from ..engine.context import Context
from ..errors import DeadlineExceeded
from ..records import OpStatus, Severity, Step, utcnow

__all__ = ["StepDeadline", "StepTimedOut", "attempt_within"]

R = TypeVar("R")


class StepTimedOut(DeadlineExceeded):
    """An attempt at a step ran past the agent's step timeout."""


@dataclass(frozen=True)
class _Deadline:
    at: dt.datetime
    message: str


# The deadline of the attempt running in this asyncio task (and the tasks it starts: parallel tool calls).
_DEADLINE: ContextVar[_Deadline | None] = ContextVar("ratchet_step_deadline", default=None)


async def attempt_within(
    ctx: Context, timeout: float | None, step: Step, attempt: Callable[[], Awaitable[R]]
) -> tuple[R | None, str | None]:
    """Run `attempt` (one act of `step`) within `timeout` seconds.

    Returns:
        (its outcome, None), or (None, why not) when the attempt timed out.
    """
    if timeout is None:
        return await attempt(), None
    started = await ctx.now()  # journaled: every replay computes the same deadline
    message = f"step {step.index + 1} ({step.name}) timed out after {timeout:g} s"
    token = _DEADLINE.set(_Deadline(started + dt.timedelta(seconds=timeout), message))
    try:
        return await attempt(), None
    except StepTimedOut as timed_out:
        why = str(timed_out)
    finally:
        _DEADLINE.reset(token)
    await ctx.emit(
        f"{why}; the attempt ends as if its check failed",
        kind="step_timed_out",
        severity=Severity.WARNING,
        data={"index": step.index, "attempt": step.attempts, "timeout": timeout},
    )
    return None, why


class StepDeadline:
    """Holds each call of a timed attempt to the attempt's deadline (see the module's docstring)."""

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        deadline = _DEADLINE.get()
        if deadline is None:
            return await proceed(call)
        recorded = call.context.journal.lookup(call.seq)
        if recorded is not None:
            if recorded.is_finished and recorded.error_type == StepTimedOut.__name__:
                call.attempt = int(recorded.meta.get(_USED, recorded.attempt))
                raise StepTimedOut(recorded.error or deadline.message)
            if (recorded.is_finished and not recorded.retry_pending) or recorded.status is OpStatus.STARTED:
                return await proceed(call)  # replayed, or in doubt: settled as usual
        remaining = (deadline.at - utcnow()).total_seconds()
        if remaining <= 0:
            await _cut(call, deadline, used=recorded.attempt if recorded is not None else 0)
        try:
            async with bounded(remaining) as scope:
                return await proceed(call)
        except TimeoutError:
            if not scope.expired():
                raise
            await _cut(call, deadline, used=_attempts_made(call))


# How many attempts of a cut call reached the model: a scripted model's next request takes the next entry.
_USED = "attempts_used"


def _attempts_made(call: Call) -> int:
    """The attempts of `call` that reached the model (its last one may have been cut before it did)."""
    ordinal = call.meta.get("ordinal")
    return ordinal - call.ordinal_base + 1 if isinstance(ordinal, int) else call.attempt - 1


async def _cut(call: Call, deadline: _Deadline, *, used: int) -> NoReturn:
    """Record `call` as failed by the step's timeout, then end the attempt.

    Should the call's own result have been committed just as time ran out,
    the store refuses this record (`DuplicateRecord`, a store error): the task
    then stops resumable, and its resume replays the call and cuts the next.
    """
    timed_out = StepTimedOut(deadline.message)
    call.meta[_USED] = used
    await call.context.journal.record_outcome(call, error=timed_out)
    call.attempt = used  # what the context counts as taken, for the next request's ordinal
    raise timed_out

"""A tool call in flight when its task is stopped: the tool finishes, and what it did is journaled.

A stop reaches a run as the cancellation of the code that awaits it:
Ctrl-C or SIGTERM in ``ratchet run`` and ``ratchet resume``, a program's
`asyncio.run` told KeyboardInterrupt, a lease lost, a worker's grace run
out. A plain (not ``async``) tool runs in a thread, which nothing can
interrupt: cancelled, the call stopped waiting for it, the thread went on
to do its effect, and its result was thrown away; the next run found the
call in doubt and ran it again. An ``async`` tool was cut wherever it was,
perhaps after its effect. So a run's workflow runs as an asyncio task of
its own behind one shield (`run_holding_stops`, one per run), and each
call of a tool with side effects says while it is in flight
(`run_to_the_end`, which awaits the tool in the run's own task: no task
and no shield of its own, no turn of the event loop). A stop that comes:

- while no such call is in flight goes on into the run at once, as it
  always did: a model call, a backoff, a wait or a call of a tool safe to
  repeat (``read_only`` or ``idempotent=True``: the next run runs it
  again, as after a crash) is cut where it is;
- sent with `cut_short` (a lease lost: another worker may run the call
  now; a worker's grace run out, or its second signal) goes on at once
  too, cutting the tool: its outcome is then not known;
- otherwise is held (`InFlight.held`): the tool runs on, and what it
  returned or raised is kept on the call (`Call.finished_late`) for the
  journal's layers to record, each under a shield, before the stop goes
  on from there, as the cancellation it was. No new call starts while one
  is held (`InFlight.stop_if_held`). A second stop while it is held goes
  on at once: the call is then in doubt, as after a crash.

A timeout of the engine's own (`bounded`: a tool's ``timeout``, a step's,
the task's deadline, the agent's step timeout) runs inside the run's task
and cancels it there, so it cuts a tool at once, as it always did: a
timeout bounds how long a call may take, and the call is recorded as
failed. So does any cancellation made inside the run (a workflow's own
`asyncio.timeout`, a `TaskGroup` whose other task failed): only a stop
from outside is held. Model calls are cut at once: nothing of theirs is
lost but the answer, which the next run asks for again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from pydantic import JsonValue

from .call import Call, FinishedLate, InFlight

__all__ = ["InFlight", "bounded", "cut_short", "run_holding_stops", "run_to_the_end"]

log = logging.getLogger("ratchet.engine")

T = TypeVar("T")

# The message of a cancellation that cuts a tool call at once (`cut_short`).
_AT_ONCE = "ratchet: cut short"

# The engine's timeouts around the code running in this asyncio task (and the tasks it starts).
_BOUNDS: ContextVar[tuple[asyncio.Timeout, ...]] = ContextVar("ratchet_bounds", default=())


@contextlib.asynccontextmanager
async def bounded(seconds: float | None) -> AsyncIterator[asyncio.Timeout]:
    """`asyncio.timeout(seconds)`, known to `run_holding_stops` as a timeout: one that expires cuts a tool."""
    async with asyncio.timeout(seconds) as scope:
        token = _BOUNDS.set((*_BOUNDS.get(), scope))
        try:
            yield scope
        finally:
            _BOUNDS.reset(token)


def cut_short(task: asyncio.Task[Any]) -> None:
    """Cancel `task`, cutting a tool call in flight in it at once: its outcome is then not known."""
    task.cancel(_AT_ONCE)


def _cuts(stop: asyncio.CancelledError) -> bool:
    """Whether `stop` cuts a tool short: a timeout of the engine's expired, or `cut_short` sent it."""
    return stop.args[:1] == (_AT_ONCE,) or any(scope.expired() for scope in _BOUNDS.get())


async def run_to_the_end(call: Call, tool_run: Coroutine[Any, Any, JsonValue]) -> JsonValue:
    """Await `tool_run`, the tool of `call`; stopped meanwhile, let it finish (see the module's docstring).

    The tool runs in the run's own task, as if awaited plainly: what this
    adds to a call is a dictionary's entry, made and taken back.

    Raises:
        asyncio.CancelledError: the run was stopped while the tool ran; `call.finished_late`
            then holds what the tool did. Or the tool was cut: its outcome is not known.
    """
    if not call.needs_intent:
        return await tool_run  # safe to repeat: cut at once wherever it is, so nothing to hold
    flight = call.context.in_flight
    calls = flight.calls
    calls[call.seq] = call
    try:
        output = await tool_run
    except Exception as error:
        if flight.held is None:
            raise
        late = FinishedLate(error=error)
    else:
        if flight.held is None:
            return output
        late = FinishedLate(output=output)
    finally:
        del calls[call.seq]
    call.finished_late = late
    raise flight.going_on()


async def run_holding_stops(flight: InFlight, work: Coroutine[Any, Any, T]) -> T:
    """Await `work`, a run's workflow, as a task of its own; hold a stop while `flight` has calls in flight.

    One task and one shield for the whole run (see the module's docstring).
    A stop is passed on into the run as the cancellation it was, once
    nothing it must wait for is in flight; then the run's own outcome,
    whatever it is, is this one's.
    """
    exited: list[SystemExit] = []
    run = asyncio.ensure_future(_exits_caught(work, exited))
    stopped = False
    while True:
        try:
            done = await asyncio.shield(run)
        except asyncio.CancelledError as stop:
            if run.done():  # ended as it was stopped
                if not run.cancelled():
                    run.exception()  # the stop is what goes on: the run's own end is no news
                raise
            if not stopped and not _cuts(stop) and flight.calls:
                stopped = True
                flight.held = stop
                _say_held(flight)
                continue
            stopped = True
            run.cancel(*stop.args[:1])  # a second stop, a cut, or nothing to wait for: at once
            continue
        if exited:
            raise exited[0]
        return done


async def _exits_caught(work: Coroutine[Any, Any, T], exited: list[SystemExit]) -> T:
    """Await `work`; a SystemExit it raises is kept in `exited`, for `run_holding_stops` to raise.

    Raised out of an asyncio task, it would stop the event loop, and every
    task of the process with it; raised in the awaiting task, the runner
    records it as the workflow's failure.
    """
    try:
        return await work
    except SystemExit as exit_:
        exited.append(exit_)
        return None  # type: ignore[return-value]  # never returned: `run_holding_stops` raises `exited`


def _say_held(flight: InFlight) -> None:
    for call in flight.calls.values():
        log.warning(
            "task %s: stopping once %s (operation %d) returns, to record what it did "
            "(stop it again to stop at once: the call is then in doubt)",
            call.task_id,
            call.describe(),
            call.seq,
        )

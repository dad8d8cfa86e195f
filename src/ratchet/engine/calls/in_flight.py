"""A tool call in flight when its task is stopped: the tool finishes, and what it did is journaled.

A stop reaches a run as the cancellation of its asyncio task: Ctrl-C or
SIGTERM in ``ratchet run`` and ``ratchet resume``, a program's `asyncio.run`
told KeyboardInterrupt, a lease lost. A plain (not ``async``) tool runs in a
thread, which nothing can interrupt: cancelled, the call stopped waiting for
it, the thread went on to do its effect, and its result was thrown away; the
next run found the call in doubt and ran it again. An ``async`` tool was cut
wherever it was, perhaps after its effect. So `run_to_the_end` runs a tool
with side effects as an asyncio task of its own and, when the call is
cancelled:

- by a timeout of the engine's own (`bounded`: a tool's ``timeout``, a
  step's, the task's deadline, the agent's step timeout), cuts the tool at
  once, as it always did: a timeout bounds how long a call may take, and the
  call is recorded as failed;
- cancelled with `cut_short` (a lease lost: another worker may run the
  call now; a worker's grace run out, or its second signal), cuts it at once
  too;
- of a tool safe to repeat (``read_only`` or ``idempotent=True``), cuts it at
  once too: the next run runs it again, as after a crash;
- otherwise lets the tool run on and waits for it: what it returned or
  raised is kept on the call (`Call.finished_late`) for the journal's layers
  to record, each under a shield, before the cancellation goes on. A second
  cancellation while it waits stops at once: the call is then in doubt, as
  after a crash.

Model calls are cut at once: nothing of theirs is lost but the answer,
which the next run asks for again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Coroutine
from contextvars import ContextVar
from typing import Any

from pydantic import JsonValue

from .call import Call, FinishedLate

__all__ = ["bounded", "cut_short", "run_to_the_end"]

log = logging.getLogger("ratchet.engine")

# The message of a cancellation that cuts a tool call at once (`cut_short`).
_AT_ONCE = "ratchet: cut short"

# The engine's timeouts around the code running in this asyncio task (and the tasks it starts).
_BOUNDS: ContextVar[tuple[asyncio.Timeout, ...]] = ContextVar("ratchet_bounds", default=())


@contextlib.asynccontextmanager
async def bounded(seconds: float | None) -> AsyncIterator[asyncio.Timeout]:
    """`asyncio.timeout(seconds)`, known to `run_to_the_end` as a timeout: one that expires cuts a tool."""
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


if sys.version_info >= (3, 12):

    def _started(tool_run: Coroutine[Any, Any, JsonValue]) -> asyncio.Task[JsonValue]:
        """`tool_run` as a task of its own, run at once up to its first wait.

        A tool that returns without waiting (most quick ones) is done before
        anything could stop it, at no turn of the event loop (a task and a
        shield cost three, ~10 µs a call: docs/architecture.md); one that
        waits goes on as its own task, as on Python 3.11. It runs as its own
        task from its first line (``asyncio.current_task()``, a timeout it
        sets), unlike a coroutine stepped by hand would.
        """
        return asyncio.Task(tool_run, loop=asyncio.get_running_loop(), eager_start=True)

else:
    _started = asyncio.ensure_future


async def run_to_the_end(call: Call, tool_run: Coroutine[Any, Any, JsonValue]) -> JsonValue:
    """Await `tool_run`, the tool of `call`; stopped meanwhile, let it finish (see the module's docstring).

    Raises:
        asyncio.CancelledError: the call was cancelled; `call.finished_late` then holds
            what the tool did, if it finished.
    """
    if not call.needs_intent:
        return await tool_run  # safe to repeat: cut at once wherever it is, so nothing to shield
    running = _started(tool_run)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError as stop:
        if _cuts(stop):
            running.cancel()  # the tool sees the cancellation, as it would have without the shield
            return await running
        stopped = stop
    log.warning(
        "task %s: stopping once %s (operation %d) returns, to record what it did "
        "(stop it again to stop at once: the call is then in doubt)",
        call.task_id,
        call.describe(),
        call.seq,
    )
    try:
        output = await asyncio.shield(running)
    except asyncio.CancelledError:  # stopped again: at once
        running.cancel()
        raise
    except Exception as error:
        call.finished_late = FinishedLate(error=error)
    else:
        call.finished_late = FinishedLate(output=output)
    raise stopped

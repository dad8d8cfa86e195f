"""The middleware that reports live calls: a span each, and the metrics' counts.

It sits outermost in the chain (``default_chain``), so it sees a call once,
with all its attempts, and after the journal committed its outcome. A call
the journal replays passes through untouched: nothing is reported twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pydantic import JsonValue

from ...errors import TaskStopped
from ...observe.recording import MeasuredCall, current_recorder
from ...observe.spans import call_span, tracing_on
from ...records import OpKind, OpStatus, utcnow

if TYPE_CHECKING:
    from .call import Call

__all__ = ["ObserveCalls"]

log = logging.getLogger("ratchet.calls")


class ObserveCalls:
    """Reports each live call as a span, in the metrics and in the debug log; replays are not reported.

    Where the reports go is looked up once, when the layer is made: a task's
    chain is built as its run starts, so a recorder installed or a provider
    set reaches the tasks that start after it. Asking OpenTelemetry for its
    providers at every call cost more than the rest of this layer.
    """

    def __init__(self) -> None:
        self.recorder = current_recorder()
        self.tracing = tracing_on()

    @property
    def idle(self) -> bool:
        """Whether nothing would see what it reports now: no recorder, no tracing, no debug log."""
        return self.recorder is None and not self.tracing and not log.isEnabledFor(logging.DEBUG)

    async def __call__(self, call: Call, proceed: Callable[[Call], Awaitable[JsonValue]]) -> JsonValue:
        if self.idle:
            return await proceed(call)
        recorder = self.recorder
        recorded = call.context.journal.lookup(call.seq)
        if recorded is not None and recorded.is_finished and not recorded.retry_pending:
            return await proceed(call)  # a replay: it was reported when it ran
        in_doubt = recorded is not None and recorded.status is OpStatus.STARTED
        if in_doubt and recorder is not None:
            recorder.in_doubt()
        # The attempt the journal will run first (JournalMiddleware._resume): a tool found in
        # flight, or a failed attempt due again, runs as the next one.
        first = 1
        if recorded is not None:
            first = recorded.attempt + (0 if in_doubt and call.kind is OpKind.MODEL else 1)
        started = utcnow()
        began = time.perf_counter()  # the metrics' duration: a monotonic clock
        outcome, error = "succeeded", None
        answer: JsonValue = None
        try:
            answer = await proceed(call)
            return answer
        except TaskStopped as stopped:
            outcome, error = "stopped", f"{type(stopped).__name__}: {stopped}"
            raise
        except Exception as failed:
            kind = getattr(failed, "error_type", "") or type(failed).__name__  # OperationFailed's cause
            outcome, error = "failed", f"{kind}: {failed}"
            raise
        except BaseException:
            # Paused (a person, a timer), stopped, fenced off: the call did not end here. If
            # attempts failed before a timer took the wait over, they are reported as such.
            outcome = "retry_later" if call.attempt > first else ""
            raise
        finally:
            if outcome:
                log.debug(
                    "task %s: %s call %d (%s) %s after %d attempt(s)",
                    call.task_id, call.kind, call.seq, call.name, outcome, call.attempt - first + 1,
                )  # fmt: skip
                if recorder is not None:
                    recorder.call_ended(str(call.kind), outcome)
                    recorder.call_measured(MeasuredCall.of(call, outcome, time.perf_counter() - began, error))
                    if call.attempt > first:  # each attempt before the current one failed
                        recorder.retried(str(call.kind), call.attempt - first)
                call_span(
                    call, first_attempt=first, started=started, outcome=outcome, error=error, answer=answer
                )

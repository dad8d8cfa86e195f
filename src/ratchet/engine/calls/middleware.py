"""What happens around every model and tool call, one small class per concern.

The chain, from the outside in::

    observe -> events -> budget -> approval -> journal -> retry -> limits -> the call

is built in one place, `default_chain`. A middleware is any object with
``async def __call__(self, call, proceed)`` that returns what ``await
proceed(call)`` returns (or raises); add your own (caching, redaction) by
passing ``middleware=[...]`` to the workflow's context, and it runs just
inside the events layer. A middleware with ``before_model(request, host)``
instead rewrites model requests before they take their seq: compaction
(`ratchet.engine.calls.compaction`) is one.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from pydantic import JsonValue

from ...errors import (
    DeadlineExceeded,
    LeaseLost,
    NonDeterminismError,
    OperationFailed,
    StoreError,
    TaskStopped,
)
from ...records import Event, Operation, OpKind, OpStatus, RiskLevel, Severity, WaitReason, utcnow
from ...tools import Reconciled
from ..faults import crash_point
from .call import Call, TaskSuspended, WorkerStopping, error_text
from .cost import UNPRICED_META, priced_answer
from .fallback import noting_error
from .in_flight import bounded, run_to_the_end
from .limiting import LimitMiddleware
from .observing import ObserveCalls
from .tool_serving import serving_tool

__all__ = [
    "ApprovalMiddleware",
    "BudgetMiddleware",
    "EventsMiddleware",
    "JournalMiddleware",
    "Middleware",
    "RetryMiddleware",
    "compose",
    "default_chain",
    "perform",
    "tool_chain",
]

Proceed = Callable[[Call], Awaitable[JsonValue]]

# Control flow that passes through every layer untouched: nothing is recorded for it. A store
# error is not the call's outcome either: the task stops, resumable, and the call is settled then.
_PASS_THROUGH = (TaskSuspended, WorkerStopping, LeaseLost, asyncio.CancelledError, StoreError)


class Middleware(Protocol):
    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue: ...


def compose(chain: Sequence[Middleware], terminal: Proceed) -> Proceed:
    """Wrap `terminal` in `chain`, the first middleware outermost."""
    run = terminal
    for layer in reversed(chain):
        run = functools.partial(layer.__call__, proceed=run)
    return run


def default_chain(extra: Sequence[Middleware] = ()) -> list[Middleware]:
    """The standard chain, with `extra` middleware just inside the events layer.

    Outermost, `ObserveCalls` reports each live call as a span and in the
    metrics (docs/observability.md); it costs a check when neither is on
    (and a tool call's chain leaves it out then: `tool_chain`).
    """
    return [
        ObserveCalls(),
        EventsMiddleware(),
        *extra,
        BudgetMiddleware(),
        ApprovalMiddleware(),
        JournalMiddleware(),
        RetryMiddleware(),
        LimitMiddleware(),  # around each attempt: every attempt takes a turn (limiting.py)
    ]


def tool_chain(
    extra: Sequence[Middleware] = (), *, budgeted: bool = True, skip_idle: bool = False
) -> list[Middleware]:
    """`default_chain` as a tool call runs through it: without the layers that would do nothing for one.

    Built once per task (the context's), so a call passes through no layer
    it does not need: `LimitMiddleware` holds model calls only, and
    `BudgetMiddleware` counts a model call's usage and checks the task's
    limits, so a task with none (not `budgeted`) leaves it out too. With
    `skip_idle`, so does `ObserveCalls` when nothing would see its reports
    (`ObserveCalls.idle`, as the chain is built: the task's run).
    """
    return [
        layer
        for layer in default_chain(extra)
        if not isinstance(layer, LimitMiddleware)
        and (budgeted or not isinstance(layer, BudgetMiddleware))
        and not (skip_idle and isinstance(layer, ObserveCalls) and layer.idle)
    ]


class EventsMiddleware:
    """Reports calls as events, committed with the journal's writes (never a commit of its own).

    The journal already records every call, so not every call becomes an
    event too: model answers, failures, retries and calls of
    ``external_action`` tools do (what people follow); a successful
    ``read_only`` or ``write_local`` tool call shows in the journal only.
    ``EventsMiddleware(every_call=True)`` reports every call.
    """

    def __init__(self, *, every_call: bool = False) -> None:
        self.every_call = every_call

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        if call.will_replay:
            return await proceed(call)
        noteworthy = (
            self.every_call
            or call.kind is OpKind.MODEL
            or (call.tool is not None and call.tool.risk is RiskLevel.EXTERNAL_ACTION)
        )
        if noteworthy and call.kind is OpKind.TOOL:
            # Told when it is written: by then an approval may have changed the arguments.
            call.stage_event(functools.partial(_call_event, call))
        call.on_outcome(_outcome_event if noteworthy else _failure_event)
        return await proceed(call)


def _call_event(call: Call) -> Event:
    described = call.describe()  # cut short; the arguments are whole in the data
    return Event(
        task_id=call.task_id,
        kind="tool_call",
        message=f"tool call {call.seq}: {described}",
        display_message=f"-> {described}",
        data={"seq": call.seq, "name": call.name, "arguments": call.input},
    )


def _failure_event(op: Operation) -> Event | None:
    """The event of a call that is not noteworthy: none unless it failed."""
    if op.status is OpStatus.SUCCEEDED:
        return None
    return Event(
        task_id=op.task_id,
        kind=f"{op.kind}_failed",
        severity=Severity.ERROR,
        message=f"{op.kind} call {op.seq} ({op.name}) failed: {op.error_type}: {op.error}",
        display_message=f"<- {op.name} failed: {op.error}",
        data={"seq": op.seq, "name": op.name, "attempt": op.attempt, "error_type": op.error_type},
    )


def _outcome_event(op: Operation) -> Event | None:
    """The event of a noteworthy call's outcome."""
    if op.status is not OpStatus.SUCCEEDED:
        return _failure_event(op)
    data: dict[str, JsonValue] = {"seq": op.seq, "name": op.name, "attempt": op.attempt}
    if op.kind is OpKind.MODEL:
        answer = op.output if isinstance(op.output, dict) else {}
        calls = len(answer.get("tool_calls") or [])
        said = f"{calls} tool call(s)" if calls else "an answer"
        return Event(
            task_id=op.task_id,
            kind="model_result",
            message=f"model call {op.seq} ({op.name}, attempt {op.attempt}) returned {said}",
            display_message=f"<- model ({op.name.removeprefix('model:')}): {said}",
            data={**data, "usage": op.meta.get("usage")},
        )
    return Event(
        task_id=op.task_id,
        kind="tool_result",
        message=f"tool call {op.seq} ({op.name}) succeeded on attempt {op.attempt}",
        display_message=f"<- {op.name} ok",
        data=data,
    )


class BudgetMiddleware:
    """Checks the task's limits before and after each live call.

    Counts what each call used, replayed calls included, so a resumed task
    sees the budget as it was.
    """

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        budget = call.context.budget
        live = not call.will_replay
        if live:
            await budget.check()
        output = await proceed(call)
        if call.kind is OpKind.MODEL:
            budget.count_usage(call.meta.get("usage"), call.meta.get(UNPRICED_META))
        if live:
            await budget.check()
        return output


class ApprovalMiddleware:
    """Asks the context to approve each live tool call (people in the loop).

    ``context.approve`` returns to let the call run or raises `TaskSuspended`
    after committing a ``waiting(approval)`` state.
    """

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        if call.kind is OpKind.TOOL and not call.will_replay:
            await call.context.approve(call)
        return await proceed(call)


class JournalMiddleware:
    """Replays recorded results, settles calls caught in flight, and records outcomes."""

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        recorded = call.context.journal.lookup(call.seq)
        if recorded is not None:
            replayed = await self._resume(call, recorded)
            if not isinstance(replayed, _Live):
                return replayed
        call.context.stop_here_if_stopping(call)
        if call.kind is OpKind.MODEL:  # an answer takes a while: results riding along commit first
            await call.context.journal.flush()
        try:
            output = await proceed(call)
        except asyncio.CancelledError:
            await _record_late(call)
            raise
        except _PASS_THROUGH:
            raise
        except TaskStopped as stopped:
            await call.context.journal.record_outcome(call, error=stopped)
            raise
        except Exception as error:
            op = await call.context.journal.record_outcome(call, error=error)
            raise OperationFailed(
                call.name, call.seq, op.error_type or "", op.error or "", attempts=op.attempt
            ) from error
        await call.context.journal.record_outcome(call, output=output)
        return output

    async def _resume(self, call: Call, recorded: Operation) -> JsonValue | _Live:
        if recorded.name != call.name or recorded.kind is not call.kind:
            raise NonDeterminismError(
                call.task_id, call.seq, f"{recorded.kind} {recorded.name}", f"{call.kind} {call.name}"
            )
        call.recorded = recorded
        call.meta = dict(recorded.meta)
        if recorded.status is OpStatus.SUCCEEDED:
            call.replayed, call.attempt = True, recorded.attempt
            return await call.context.journal.recorded_output(recorded)  # stored as JSON, read back as JSON
        if recorded.retry_pending:
            call.attempt, call.not_before = recorded.attempt + 1, recorded.next_attempt_at
            return _LIVE
        if recorded.status is OpStatus.FAILED:
            call.replayed, call.attempt = True, recorded.attempt
            raise OperationFailed(
                recorded.name,
                recorded.seq,
                recorded.error_type or "",
                recorded.error or "",
                attempts=recorded.attempt,
            )
        return await self._settle_in_doubt(call, recorded)

    async def _settle_in_doubt(self, call: Call, recorded: Operation) -> JsonValue | _Live:
        tool = call.tool
        context = call.context
        if call.kind is not OpKind.TOOL or tool is None:
            call.attempt = recorded.attempt
            return _LIVE
        call.attempt = recorded.attempt + 1
        if tool.safe_to_repeat or tool.takes_key:
            call.stage_event(
                Event(
                    task_id=call.task_id,
                    kind="in_doubt_rerun",
                    message=f"{tool.name} (operation {call.seq}) was in flight when the worker "
                    f"stopped; running it again with idempotency key {call.idempotency_key}",
                    data={"seq": call.seq},
                )
            )
            return _LIVE
        if tool.reconcile is not None:
            tool_context = context.tool_context(call)
            if tool_context.session is not None:
                await tool_context.session.load()
            verdict = tool.reconcile(tool_context)
            if asyncio.iscoroutine(verdict):
                verdict = await verdict
            if not isinstance(verdict, Reconciled):
                raise TypeError(f"reconcile of {tool.name} must return a Reconciled, not {verdict!r}")
            if verdict.verdict == "done":
                call.attempt = recorded.attempt
                await context.journal.record_outcome(call, output=verdict.result)
                return verdict.result
            if verdict.verdict == "run_again":
                return _LIVE
        return await context.suspend(  # never returns: the task waits for a person
            WaitReason.IN_DOUBT,
            f"{call.describe()} (operation {call.seq}) was in flight when the worker stopped and "
            f"may or may not have happened; settle it with `ratchet resolve {call.task_id} "
            f"--op {call.seq} --retry|--skip|--result JSON`",
            data={"seq": call.seq, "tool": call.name, "arguments": call.input},
        )


async def _record_late(call: Call) -> None:
    """Record what the tool of a stopped call did once it finished (`in_flight`), before the stop goes on.

    In a task of its own, so a second stop while it commits does not cut it
    off; a write the store refuses leaves the call in doubt, as after a crash.
    """
    late, call.finished_late = call.finished_late, None
    if late is None:
        return
    write = call.context.journal.record_outcome(call, output=late.output, error=late.error)
    with contextlib.suppress(LeaseLost, StoreError):
        await asyncio.shield(write)


class _Live:
    """`JournalMiddleware._resume`'s answer when the call must run live."""


_LIVE = _Live()


class RetryMiddleware:
    """Runs the call, retrying per its policy; each failed attempt and its next time are committed."""

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        context = call.context
        while True:
            if call.not_before is not None:
                await context.wait_until(call.not_before, call)
                context.stop_here_if_stopping(call)
            call.started_at = utcnow()  # the journal row keeps only the last attempt's: a retry tells it
            if call.needs_intent:
                await context.journal.record_intent(call)
            try:
                if call.timeout is None:
                    return await proceed(call)
                async with bounded(call.timeout):
                    return await proceed(call)
            except asyncio.CancelledError:
                await self._retry_late(call)
                raise
            except _PASS_THROUGH:
                raise
            except TaskStopped:
                raise
            except TimeoutError as error:
                if call.timeout is None:
                    raise
                raise DeadlineExceeded(
                    f"{call.kind} {call.name} (operation {call.seq}) timed out after {call.timeout:g} s"
                ) from error
            except Exception as error:
                if not _retries(call, error):
                    raise
                await _next_attempt(call, error)
                call.attempt += 1
                crash_point("during_backoff")

    @staticmethod
    async def _retry_late(call: Call) -> None:
        """A stopped call whose tool failed once it finished (`in_flight`) is retried by the next run, if
        its policy allows; its failure is left for the journal layer to record otherwise."""
        late = call.finished_late
        if late is None or late.error is None or not _retries(call, late.error):
            return
        call.finished_late = None
        with contextlib.suppress(LeaseLost, StoreError):  # unrecorded, the call stays in doubt
            await asyncio.shield(_next_attempt(call, late.error))


def _retries(call: Call, error: Exception) -> bool:
    """Whether `call`'s policy retries `error` after the attempt that raised it."""
    return call.retry.is_retryable(error) and call.retry.allows_another(call.attempt)


async def _next_attempt(call: Call, error: Exception) -> None:
    """Commit the failed attempt, with a `retry` event and the time the next one is due."""
    delay = call.retry.delay(call.attempt, retry_after=getattr(error, "retry_after", None))
    call.not_before = utcnow() + dt.timedelta(seconds=delay)
    call.stage_event(
        Event(
            task_id=call.task_id,
            kind="retry",
            severity=Severity.WARNING,
            message=(
                f"{call.name} (operation {call.seq}) attempt {call.attempt} failed: "
                f"{error_text(error)}; attempt {call.attempt + 1} in {delay:.3g} s"
            ),
            data={
                "seq": call.seq,
                "attempt": call.attempt,
                "delay": delay,
                "started_at": call.started_at.isoformat() if call.started_at else None,
            },
        )
    )
    await call.context.journal.record_retry(call, error, call.not_before)


async def perform(call: Call) -> JsonValue:
    """The real call at the end of the chain: the model provider or the tool."""
    context = call.context
    if call.kind is OpKind.MODEL and call.run is not None:
        crash_point("during_model_call")
        return await call.run(call)
    if call.kind is OpKind.MODEL:
        assert call.request is not None
        ordinal = call.ordinal_base + call.attempt - 1
        call.meta["ordinal"] = ordinal
        crash_point("during_model_call")
        provider = context.model_for(call.model)
        request = call.request
        # A provider that streams hands its pieces to the task's stream (engine/streams.py) as they come.
        streaming = getattr(provider, "complete_streaming", None) if call.stream else None
        if streaming is None:
            answered = await noting_error(call, provider.complete(request, ordinal=ordinal))
        else:
            answered = await noting_error(
                call,
                context.stream_writer().attempt(
                    call.seq,
                    call.attempt,
                    lambda on_text: streaming(request, ordinal=ordinal, on_text=on_text),
                ),
            )
        response = priced_answer(call, provider, answered)
        call.meta["usage"] = response.usage.model_dump()
        answer: JsonValue = response.model_dump(mode="json")
        return answer
    tool = call.tool
    assert tool is not None
    arguments = call.input or {}
    assert isinstance(arguments, dict)
    tool_context = None
    if tool.takes_key:  # only a tool with a ToolContext parameter sees its context (and session)
        tool_context = context.tool_context(call)
        if tool_context.session is not None:
            await tool_context.session.load()  # its state as the call starts
    # Code in the body that is handed no context (a pydantic-ai tool) asks for it: built then, once.
    with serving_tool(call, tool_context):
        # It validates them into arguments of its own. Stopped meanwhile, it still finishes (in_flight.py).
        return await run_to_the_end(call, tool.invoke(arguments, tool_context))

"""One journaled call on its way through the middleware chain, and how a task pauses.

A middleware sees a `Call`: the call itself (kind, name, seq, input, the tool
or model request) and, as ``call.context``, the few things of the task's
context a middleware may use (`CallContext`), not the whole workflow context.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn, Protocol

from pydantic import JsonValue

from ...policy import RetryPolicy
from ...records import Event, Lease, Operation, OpKind, Task, Trigger, WaitReason
from ...store import StateStore
from ...tools import Tool, ToolContext
from ..budget import BudgetTracker
from ..streams import StreamWriter

if TYPE_CHECKING:  # the providers are imported when a task first calls its model
    from ...providers import ModelProvider, ModelRequest

__all__ = [
    "Call",
    "CallContext",
    "CallJournal",
    "FinishedLate",
    "InFlight",
    "TaskSuspended",
    "WorkerStopping",
    "step_meta",
]


class TaskSuspended(BaseException):
    """The task waits (on a person or a timer); the workflow unwinds and the worker lets go.

    A BaseException, like cancellation: user code's ``except Exception`` must
    not stop a task from pausing. The waiting state is already committed
    when it is raised.
    """

    def __init__(self, reason: WaitReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class WorkerStopping(BaseException):
    """The worker is shutting down: the workflow unwinds before its next live call.

    Nothing is recorded for it; the task stays as it is and, its lease
    released, another worker resumes it from the journal.
    """


class CallJournal(Protocol):
    """The task's journal as a middleware uses it: what was recorded, and recording a call."""

    def lookup(self, seq: int) -> Operation | None:
        """The operation recorded at `seq`, or None."""
        ...

    async def recorded_output(self, op: Operation) -> JsonValue:
        """The output `op` recorded (read back from its artifact when it was too large to keep inline)."""
        ...

    async def record_intent(self, call: Call) -> None:
        """Commit that the call is about to run (before its effect)."""
        ...

    async def record_retry(self, call: Call, error: BaseException, next_attempt_at: dt.datetime) -> None:
        """Commit a failed attempt and when the next one is due."""
        ...

    async def flush(self) -> None:
        """Commit now the results riding on the task's next write (before a wait)."""
        ...

    async def record_outcome(
        self, call: Call, *, output: JsonValue = None, error: BaseException | None = None
    ) -> Operation:
        """Commit the call's final result, or its final failure."""
        ...


class CallContext(Protocol):
    """What a middleware may use of the context its call runs in (`Context` implements it)."""

    @property
    def task(self) -> Task:
        """The task the call belongs to, as it stands (read it; never change it)."""
        ...

    @property
    def journal(self) -> CallJournal: ...

    @property
    def store(self) -> StateStore:
        """The store the task runs on (the shared limits are kept there: `ratchet.engine.calls.limiting`)."""
        ...

    @property
    def lease(self) -> Lease:
        """The lease the task runs under."""
        ...

    @property
    def current_step(self) -> int | None:
        """The index of the step running now, if any (an artifact a call makes records it)."""
        ...

    @property
    def budget(self) -> BudgetTracker: ...

    @property
    def model(self) -> ModelProvider:
        """The task's model."""
        ...

    def model_for(self, model: str | None) -> ModelProvider:
        """The provider of `model` (``provider:name``; None: the task's), built once per model string."""
        ...

    def tool_context(self, call: Call) -> ToolContext:
        """What the call's tool receives as ``ctx``."""
        ...

    def stream_writer(self) -> StreamWriter:
        """The run's writer of the task's stream (engine/streams.py), where a streamed answer goes."""
        ...

    async def approve(self, call: Call) -> None:
        """Let a live tool call run, or wait for a person's approval (raises `TaskSuspended`)."""
        ...

    def stop_here_if_stopping(self, call: Call) -> None:
        """Raise `WorkerStopping` when the worker shuts down, or a held stop: `call` must not start."""
        ...

    @property
    def in_flight(self) -> InFlight:
        """The run's side-effect tool calls in flight, and a stop held for them (`in_flight`)."""
        ...

    async def wait_until(self, when: dt.datetime, call: Call) -> None:
        """Hold `call` until `when`, in place or as a timer that frees the worker."""
        ...

    async def suspend(
        self,
        reason: WaitReason,
        message: str,
        *,
        data: dict[str, JsonValue] | None = None,
        trigger: Trigger | None = None,
        crash_at: str | None = None,
    ) -> NoReturn:
        """Commit that the task waits (and its wake-up trigger), then raise `TaskSuspended`."""
        ...


@dataclass(frozen=True, slots=True)
class FinishedLate:
    """What a tool returned (`output`) or raised (`error`) after its call was stopped.

    Kept on the call by `ratchet.engine.calls.in_flight` for the journal's
    layers, which record it before the stop goes on.
    """

    output: JsonValue = None
    error: Exception | None = None


class InFlight:
    """A run's calls of tools with side effects in flight, and the stop held until they are journaled.

    One per run (the context's ``in_flight``): `ratchet.engine.calls.in_flight`'s
    ``run_to_the_end`` puts each such call in `calls` while its tool runs,
    and its ``run_holding_stops`` holds a stop that comes meanwhile in `held`.
    """

    __slots__ = ("calls", "held")

    def __init__(self) -> None:
        self.calls: dict[int, Call] = {}  # by seq: `ctx.call_tools` runs several at once
        self.held: asyncio.CancelledError | None = None

    def stop_if_held(self) -> None:
        """Raise the stop held for the calls in flight: no new call starts meanwhile.

        Raises:
            asyncio.CancelledError: a stop is held.
        """
        if self.held is not None:
            raise self.going_on()

    def going_on(self) -> asyncio.CancelledError:
        """The held stop as it goes on in the run's own task (with its message, as a cancellation has)."""
        assert self.held is not None
        return asyncio.CancelledError(*self.held.args)


@dataclass(slots=True)
class Call:
    """A model or tool call, as each middleware sees it.

    Attributes:
        context: what the call may use of the task's context.
        kind, name, seq, input: what the journal records.
        attempt: the attempt about to run (from 1); set from the journal on resume.
        not_before: the next attempt may not start before this time.
        started_at: when the current attempt started (None until one starts in this process).
        recorded: what the journal held at this seq when the call began.
        intent: the intent row this process wrote for the current attempt.
        replayed: the result came from the journal; nothing ran.
        meta: what the call reports besides its output (usage, ordinal).
        model: for a model call, the ``provider:name`` it names (None: the task's model).
        run: for a model call made by another library's model (an integration's), what
            makes it: `perform` awaits ``run(call)`` instead of asking a provider.
        stream: for a model call, whether its answer goes to the task's stream as it is
            written, when its provider can stream (``ctx.call_model(stream=...)``).
        ordinal_base: for a model call, how many requests of its purpose the
            task made before this call (the scripted model's ordinal is
            ``ordinal_base + attempt - 1``).
        finished_late: what the tool returned or raised after the call was
            stopped (its task cancelled), for the journal to record; None otherwise.
    """

    context: CallContext
    kind: OpKind
    name: str
    seq: int
    input: JsonValue
    retry: RetryPolicy
    tool: Tool | None = None
    request: ModelRequest | None = None
    model: str | None = None
    run: Callable[[Call], Awaitable[JsonValue]] | None = None
    stream: bool = True
    timeout: float | None = None
    attempt: int = 1
    ordinal_base: int = 0
    not_before: dt.datetime | None = None
    started_at: dt.datetime | None = None
    recorded: Operation | None = None
    intent: Operation | None = None
    replayed: bool = False
    finished_late: FinishedLate | None = None
    meta: dict[str, JsonValue] = field(default_factory=dict)
    _replays: bool | None = None  # whether the journal will replay it, once asked (`will_replay`)
    _events: list[Event | Callable[[], Event]] = field(default_factory=list)
    _on_outcome: list[Callable[[Operation], Event | None]] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        return self.context.task.id

    @property
    def idempotency_key(self) -> str:
        # A journal copied from another task (a retry, a fork) keeps the keys its calls were made with.
        if self.recorded is not None:
            return self.recorded.idempotency_key
        return f"{self.task_id}:{self.seq}"

    @property
    def needs_intent(self) -> bool:
        """A tool with side effects commits its intent before it runs (journal before effect)."""
        return self.tool is not None and not self.tool.safe_to_repeat

    @property
    def will_replay(self) -> bool:
        """Whether the journal holds the call's result already (nothing will run), as the call began.

        Asked by several layers before the journal layer writes anything: looked up once.
        """
        if self._replays is None:
            recorded = self.context.journal.lookup(self.seq)
            self._replays = recorded is not None and recorded.is_finished and not recorded.retry_pending
        return self._replays

    def stage_event(self, event: Event | Callable[[], Event]) -> None:
        """Commit `event` with this call's next journal write.

        A function is called at that write, so the event tells the call as it
        runs (e.g. with the arguments a person's approval gave it).
        """
        self._events.append(event)

    def on_outcome(self, report: Callable[[Operation], Event | None]) -> None:
        """Commit ``report(op)`` with the call's final record."""
        self._on_outcome.append(report)

    def take_events(self, outcome: Operation | None = None) -> list[Event]:
        """The events staged for the next write; with the call's `outcome`, those that report it too.

        What is staged is taken, not left: a staged event may hold the call (a
        cycle the garbage collector would otherwise have to find, once per call).
        """
        events: list[Event] = []
        if self._events:
            staged, self._events = self._events, []
            events = [event if isinstance(event, Event) else event() for event in staged]
        if outcome is not None and self._on_outcome:
            reports, self._on_outcome = self._on_outcome, []
            events += [e for report in reports if (e := report(outcome)) is not None]
        return events

    def describe(self, limit: int = 80) -> str:
        """``name(arg=value, ...)``, cut to `limit` characters."""
        if isinstance(self.input, dict) and self.kind is OpKind.TOOL:
            args = ", ".join(f"{k}={v!r}" for k, v in self.input.items())
            text = f"{self.name}({args})"
        else:
            text = self.name
        return text if len(text) <= limit else text[: limit - 3] + "..."


def step_meta(step: int | None) -> dict[str, JsonValue]:
    """What an operation records of the step it ran in: a retry cuts the journal where a step began."""
    return {} if step is None else {"step": step}


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__

"""The durable context a workflow runs in.

Its nondeterministic entry points are exactly ``call_model``, ``call_tool``
(and ``call_tools`` for parallel calls), ``now``, ``uuid``, ``sleep``, ``receive``,
the child tasks' (children.py) and ``patched`` (engine/journal/versioning.py, which may
take no seq on replay). Each
takes the next ``seq`` in program order; on resume, the workflow runs again
from the top and every seq with a recorded result returns it instead of acting
(replay), until the first seq without one, which runs live (docs/durability.md, the contract).
Workflow code must therefore be deterministic apart from these calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

from pydantic import BaseModel, JsonValue

from ...errors import DeadlineExceeded, OperationFailed, StoreError
from ...observe.spans import step_span
from ...policy import CheckpointStrategy
from ...records import (
    AgentState,
    ArtifactRef,
    Checkpoint,
    Event,
    Lease,
    Operation,
    OpKind,
    Severity,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    Trigger,
    WaitReason,
    utcnow,
)
from ...sessions import CallSession
from ...store import StateStore, StoreOps
from ...tools import Tool, ToolContext
from ..budget import BudgetTracker
from ..calls import Call, TaskSuspended, WorkerStopping, step_meta
from ..calls.foreign_models import ForeignModelCalls
from ..calls.in_flight import InFlight, bounded
from ..calls.middleware import Middleware, compose, default_chain, perform, tool_chain
from ..calls.model_calls import DEFAULT_MAX_REPAIRS, ModelCalls
from ..calls.tool_lookup import resolve_tool
from ..children import ChildTasks
from ..faults import crash_point
from ..inbox import Receiving
from ..journal import Journal
from ..journal.clock_and_uuid import RecordedValues
from ..journal.large_results import result_reference
from ..journal.versioning import Versioning, skip_unasked_markers
from ..questions import ask_person
from ..queued_patches import OutsidePatches, outside_view
from ..spend_caps import check_spend_caps
from ..stream_writes import StreamWrites
from ..workflow import Workflow
from .state import StatePatches

if TYPE_CHECKING:
    from ...providers import ModelProvider, ModelResponse

__all__ = ["ApprovalHook", "Context"]

# Decides on a live tool call: returns to let it run, or makes the task wait for a person.
ApprovalHook = Callable[["Context", Call], Awaitable[None]]

M = TypeVar("M", bound=BaseModel)

INLINE_WAIT_LIMIT = 30.0  # a retry due later than this frees the worker (a timer trigger)


class Context(
    RecordedValues,
    Versioning,
    Receiving,
    ChildTasks,
    OutsidePatches,
    StatePatches,
    ForeignModelCalls,
    StreamWrites,
):
    """What a workflow function receives as ``ctx``."""

    def __init__(
        self,
        *,
        store: StateStore,
        task: Task,
        lease: Lease,
        workflow: Workflow,
        recorded: Iterable[Operation],
        steps: Iterable[Step],
        approval_hook: ApprovalHook | None = None,
        middleware: Sequence[Middleware] = (),
        stopping: asyncio.Event | None = None,
    ) -> None:
        self.store = store
        # Set when the worker shuts down: no new live call starts (WorkerStopping instead).
        self.stopping = stopping
        # Its side-effect tool calls in flight, and a stop held until they are journaled.
        self.in_flight = InFlight()
        self.tools = {**workflow.tools, **{t.name: t for t in workflow.tools_for(task, store)}}
        self.task = task
        self.lease = lease
        self.workflow = workflow
        self.journal = Journal(store, lease, recorded, inline_limit=task.budget.max_inline_result_bytes)
        self._approval_hook = approval_hook
        # Journaled patches rebuild the state on replay; the budget's flag is not journaled
        # (when it is set depends on the clock), so it is carried over from the task.
        carried = [f for f in task.state.risk_flags if f == "budget_pressure"]
        self.state = AgentState(goal=task.goal, budget=task.budget, risk_flags=carried)
        self._steps = {step.index: step for step in steps}
        self._next_seq = 0
        self._step_count = 0
        self._current_step: int | None = None
        layers = [*workflow.middleware_for(task), *workflow.middleware, *middleware]
        # A layer with `before_model` rewrites requests before they take a seq (compaction);
        # a callable one wraps each call in the chain. One object may be both.
        request_layers = [m for m in layers if callable(getattr(m, "before_model", None))]
        wrapping = [m for m in layers if callable(m)]
        self._chain = compose(default_chain(wrapping), perform)
        self.budget = BudgetTracker(task, self._report_pressure)
        # A tool call's own chain, without the layers that would do nothing for it (`tool_chain`).
        tool_layers = tool_chain(wrapping, budgeted=self.budget.limited, skip_idle=True)
        self._tool_chain = compose(tool_layers, perform)
        self._layer_memory: dict[int, dict[str, Any]] = {}
        self.session_id: str | None = None  # the session its tools reach (`use_session`)
        self._models = ModelCalls(
            context=self,
            chain=self._chain,
            request_layers=request_layers,
            retry=workflow.retry,
            model=task.model,
            fallback_models=task.fallback_models,
            fallback_on_pressure=task.fallback_on_pressure,
            take_seq=self._take_seq,
            before_call=self._checkpoint_per_iteration,
            emit=self.emit,
            before_live=self._before_live_model,
        )
        self._written = task.write_mark or (-1, 0)
        self._write_at = (-1, 0)

    async def _before_live_model(self, call: Call) -> None:
        """Hold a model call that will run live at a spend cap (`ratchet.engine.spend_caps`)."""
        await check_spend_caps(self, call)

    async def approve(self, call: Call) -> None:
        """Let a live tool call run, or wait for a person's approval (the approval hook decides).

        Without a hook, every call runs.
        """
        if self._approval_hook is not None:
            await self._approval_hook(self, call)

    def stop_here_if_stopping(self, call: Call) -> None:
        """Raise `WorkerStopping` when the worker shuts down, or the run's held stop: `call` must not start.

        Raises:
            WorkerStopping: the worker is stopping.
            asyncio.CancelledError: the run was stopped while another call of it was in flight
                (`ratchet.engine.calls.in_flight`).
        """
        if self.stopping is not None and self.stopping.is_set():
            raise WorkerStopping(f"the worker stops before {call.name} (operation {call.seq})")
        self.in_flight.stop_if_held()

    # ------------------------------------------------------------------ identity

    @property
    def task_id(self) -> str:
        return self.task.id

    @property
    def replaying(self) -> bool:
        """Whether the journal still holds results ahead of the workflow's position."""
        return self._next_seq <= self.journal.last_recorded_seq

    async def progress(self, write: Callable[[StoreOps], Awaitable[None]]) -> bool:
        """Make a progress write (events, steps, messages, checkpoints) once, not again on resume.

        Such writes are not journaled calls, so replay alone can't tell
        whether one made after the journal's last entry already happened. Each
        is counted by its journal position; the count of the last one made
        is committed with it (``task.write_mark``), and a resume skips those
        counted before. Returns whether `write` ran; it gets the transaction.
        """
        position = self._next_seq
        count = self._write_at[1] + 1 if self._write_at[0] == position else 1
        self._write_at = (position, count)
        if self.replaying or self._write_at <= self._written:
            return False
        async with self.store.transaction(fence=self.lease) as tx:
            await write(tx)
            self.task = await outside_view(
                tx,
                self.task.model_copy(update={"write_mark": self._write_at, "cost": self.budget.cost}),
                self.state,
            )
            await tx.update_task(self.task)
        self._written = self._write_at
        return True

    @property
    def workspace(self) -> Path | None:
        return Path(self.task.workspace) if self.task.workspace else None

    @property
    def model(self) -> ModelProvider:
        return self._models.provider

    def model_for(self, model: str | None) -> ModelProvider:
        """The provider of `model` (``provider:name``; None: the task's), built once per model string."""
        return self._models.provider_for(model)

    @property
    def current_step(self) -> int | None:
        """The index of the step running now (set by ``ctx.step``, or by a loop that keeps its own)."""
        return self._current_step

    @current_step.setter
    def current_step(self, index: int | None) -> None:
        self._current_step = index

    @property
    def next_seq(self) -> int:
        """The seq the next journaled call takes (`call_tools` numbers its calls from it, in order)."""
        return skip_unasked_markers(self.journal, self._next_seq)

    def result_artifact(self, seq: int) -> ArtifactRef | None:
        """The artifact the result of the tool call at `seq` is kept in, if it was too large to
        keep in the journal (`Budget.max_inline_result_bytes`); None otherwise."""
        return result_reference(self.journal.lookup(seq))

    async def _checkpoint_per_iteration(self) -> None:
        if self.workflow.checkpoint.strategy is CheckpointStrategy.EVERY_ITERATION:
            await self.checkpoint()

    def _take_seq(self, count: int = 1) -> int:
        # A patch marker no `ctx.patched` call asked for (the call was removed) is stepped over.
        seq = skip_unasked_markers(self.journal, self._next_seq)
        self._next_seq = seq + count
        return seq

    def memory(self, layer: object) -> dict[str, Any]:
        """The run's own memory for a middleware `layer` (empty at each run's start, rebuilt by replay)."""
        return self._layer_memory.setdefault(id(layer), {})

    def use_session(self, session_id: str) -> None:
        """Bind the run to a session: its tools then reach it as ``ctx.session`` (`ToolContext`)."""
        self.session_id = session_id

    def _step_meta(self) -> dict[str, Any]:
        # Each operation says which step it ran in: a retry cuts the journal where a step began.
        return step_meta(self._current_step)

    def tool_context(self, call: Call) -> ToolContext:
        key = call.idempotency_key
        return ToolContext(
            task_id=self.task_id,
            seq=call.seq,
            attempt=call.attempt,
            idempotency_key=key,
            step=self._current_step,
            workspace=self.workspace,
            emit=self.emit,
            session=None if self.session_id is None else CallSession(self.store, self.session_id, key),
        )

    # ------------------------------------------------------------------ model and tools

    @overload
    async def call_model(self, request: Any, *, model: str | None = None) -> ModelResponse: ...

    @overload
    async def call_model(
        self, request: Any, *, schema: type[M], max_repairs: int = ..., model: str | None = None
    ) -> M: ...

    async def call_model(
        self,
        request: Any,
        *,
        schema: type[M] | None = None,
        max_repairs: int = DEFAULT_MAX_REPAIRS,
        model: str | None = None,
    ) -> ModelResponse | M:
        """Ask the task's model, or `model` (journaled; replayed on resume).

        Args:
            request: a `ModelRequest` or its dict (``purpose``, ``messages`` ...).
            model: ``provider:name`` of another model for this call (docs/team.md,
                "A model per role"); recorded in the operation's input.
            schema: a pydantic model the answer must fit: the answer is
                asked for as JSON of its schema, validated, and returned as
                an instance. An answer that does not fit is repaired (the
                model is told why and asked again, one more journaled call).
            max_repairs: how many repairs `schema` allows before giving up.

        Returns:
            The `ModelResponse`, or with `schema` an instance of it.

        Raises:
            OperationFailed: the call failed for good (after its retries).
            InvalidModelOutput: with `schema`, no answer fitted after `max_repairs` repairs.
        """
        if schema is None:  # the answer streams as it comes, unless `ctx.streaming` is off (stream_writes.py)
            return await self._models.call(request, model, self.streaming)
        return await self._models.call_for(request, schema, max_repairs, model, self.streaming)

    async def send_model_request(self, request: Any) -> ModelResponse:
        """Ask the model as `request` says, journaled, without the request middleware (compaction)."""
        return await self._models.send(request, stream=self.streaming)

    def _tool_call(self, named: str | Tool, args: dict[str, Any] | None, seq: int) -> Call:
        tool = resolve_tool(self.tools, named, self.workflow.name)
        return Call(
            context=self,
            kind=OpKind.TOOL,
            name=tool.name,
            seq=seq,
            input=dict(args or {}),
            retry=tool.retry or self.workflow.retry,
            tool=tool,
            timeout=tool.timeout,
            meta=self._step_meta(),
        )

    async def call_tool(self, tool: str | Tool, args: dict[str, Any] | None = None) -> JsonValue:
        """Run a tool through the journal; returns its result.

        Args:
            tool: the tool, or the name of one of the workflow's tools.
            args: its arguments, checked against its signature before it runs.

        Raises:
            OperationFailed: the tool failed for good (after its retries), or
                its arguments do not fit (it did not run).
        """
        return await self._tool_chain(self._tool_call(tool, args, self._take_seq()))

    async def call_tools(
        self, calls: Sequence[tuple[str | Tool, dict[str, Any] | None]]
    ) -> list[JsonValue | OperationFailed]:
        """Run several tools at once; seqs follow their order in `calls`, not completion order.

        Each call names its tool as `call_tool` does (a `Tool` or a name).
        Returns each call's result, or the `OperationFailed` it ended with,
        in the order of `calls`.
        """
        base = self._take_seq(len(calls))
        prepared = [self._tool_call(tool, args, base + i) for i, (tool, args) in enumerate(calls)]
        outcomes = await asyncio.gather(*(self._tool_chain(c) for c in prepared), return_exceptions=True)
        results: list[JsonValue | OperationFailed] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, OperationFailed):
                raise outcome
            results.append(outcome)
        return results

    async def wait_until(self, when: dt.datetime, call: Call) -> None:
        """Hold `call` until `when`: in place when soon, else as a timer trigger that frees the worker."""
        remaining = (when - utcnow()).total_seconds()
        if remaining <= 0:
            return
        if remaining <= INLINE_WAIT_LIMIT:
            await self.journal.flush()  # results riding on the next write do not wait with it
            await asyncio.sleep(remaining)
            return
        await self.suspend(
            WaitReason.TIMER,
            f"{call.name} (operation {call.seq}) waits until {when:%H:%M:%S} UTC for attempt {call.attempt}",
            trigger=Trigger(
                kind="wake",
                task_id=self.task_id,
                fire_at=when,
                dedupe_key=f"{self.task_id}:retry:{call.seq}:{call.attempt}",
            ),
        )

    async def ask_user(self, question: str) -> str:
        """Ask a person; the task waits (``waiting(input)``) until ``ratchet answer`` gives the answer.

        The question joins ``state.open_questions`` and is asked once: a
        resume before the answer waits again, one after it returns the
        recorded answer; the question is then resolved.
        """
        await self.apply_patch({"ops": [{"op": "add_open_questions", "questions": [question]}]})
        return await ask_person(self, self._take_seq(), question)

    # ------------------------------------------------------------------ state and steps

    @contextlib.asynccontextmanager
    async def step(
        self, name: str, *, description: str = "", timeout: float | None = None
    ) -> AsyncIterator[Step]:
        """Run the block as the task's next step; a resume skips the writes of finished steps."""
        index = self._step_count
        self._step_count += 1
        self.budget.count_step()
        stored = self._steps.get(index)
        if stored is not None and stored.status.is_terminal:
            yield stored  # it ended before: its calls replay, its record stays as it is
            return
        if stored is None:
            await self.budget.check()
            stored = Step(
                task_id=self.task_id,
                index=index,
                name=name,
                description=description,
                status=StepStatus.CURRENT,
                attempts=1,
            )
            self._steps[index] = stored
            async with self.store.transaction(fence=self.lease) as tx:
                await tx.replace_steps(self.task_id, [self._steps[i] for i in sorted(self._steps)])
                await tx.append_event(
                    Event(
                        task_id=self.task_id,
                        kind="step_started",
                        message=f"step {index + 1} started: {name}",
                        display_message=f"Step {index + 1}: {name}",
                    )
                )
        self._current_step = index
        try:
            if timeout is None:
                yield stored
            else:
                try:
                    async with bounded(timeout):
                        yield stored
                except TimeoutError as error:
                    raise DeadlineExceeded(
                        f"step {index + 1} ({name}) timed out after {timeout:g} s"
                    ) from error
        except StoreError:
            raise  # the store failed, not the step: it stays current for the resumed run
        except Exception as error:
            await self._end_step(index, StepStatus.FAILED, f"{type(error).__name__}: {error}")
            raise
        else:
            await self._end_step(index, StepStatus.COMPLETED, None)
        finally:
            self._current_step = None

    async def _end_step(self, index: int, status: StepStatus, failure: str | None) -> None:
        step = self._steps[index].transition(status, failure_message=failure)
        self._steps[index] = step
        severity = Severity.INFO if status is StepStatus.COMPLETED else Severity.ERROR
        async with self.store.transaction(fence=self.lease) as tx:
            await tx.update_step(step)
            await tx.append_event(
                Event(
                    task_id=self.task_id,
                    kind=f"step_{status}",
                    severity=severity,
                    message=f"step {index + 1} {status}: {step.name}" + (f" ({failure})" if failure else ""),
                )
            )
            if status is StepStatus.COMPLETED:
                await self._write_checkpoint(tx)
        step_span(self.task, step, list(self.journal.recorded.values()))

    # ------------------------------------------------------------------ checkpoints, events, waiting

    async def checkpoint(self, *, steps: Sequence[Step] | None = None) -> Checkpoint | None:
        """Write a checkpoint of the current position (not while replaying: it exists already).

        Args:
            steps: the task's steps; by default those stored (``ctx.step``'s,
                or those a loop keeping its own, the agent's, last wrote).
        """
        written: list[Checkpoint] = []

        async def write(tx: StoreOps) -> None:
            written.append(await self._write_checkpoint(tx, steps))

        await self.progress(write)
        return written[0] if written else None

    async def _write_checkpoint(self, tx: StoreOps, steps: Sequence[Step] | None = None) -> Checkpoint:
        checkpoint = await tx.put_checkpoint(
            Checkpoint(
                task_id=self.task_id,
                last_seq=self._next_seq - 1,
                task=self.task,
                steps=list(steps) if steps is not None else await tx.list_steps(self.task_id),
                state=self.state,
            )
        )
        if self.workflow.checkpoint.keep is not None:
            await tx.rotate_checkpoints(keep=self.workflow.checkpoint.keep, task_id=self.task_id)
        return checkpoint

    async def emit(
        self,
        message: str,
        *,
        kind: str = "note",
        severity: Severity = Severity.INFO,
        data: dict[str, JsonValue] | None = None,
    ) -> None:
        """Record a progress event, once (a resume does not record it again)."""
        event = Event(task_id=self.task_id, kind=kind, severity=severity, message=message, data=data or {})

        async def write(tx: StoreOps) -> None:
            await tx.append_event(event)

        await self.progress(write)

    async def _report_pressure(self, figure: str) -> None:
        self.state = self.state.model_copy(update={"risk_flags": [*self.state.risk_flags, "budget_pressure"]})
        self.task = self.task.model_copy(update={"state": self.state})

        async def write(tx: StoreOps) -> None:
            await tx.append_event(
                Event(
                    task_id=self.task_id,
                    kind="budget_pressure",
                    severity=Severity.WARNING,
                    message=f"budget pressure: {figure} used (80 % or more)",
                )
            )

        await self.progress(write)

    async def suspend(
        self,
        reason: WaitReason,
        message: str,
        *,
        data: dict[str, JsonValue] | None = None,
        trigger: Trigger | None = None,
        crash_at: str | None = None,
    ) -> NoReturn:
        """Commit that the task waits (and its wake-up trigger), then unwind the workflow."""
        task = self.task.transition(TaskStatus.WAITING, waiting_on=reason, cost=self.budget.cost)
        async with self.store.transaction(fence=self.lease) as tx:
            if trigger is not None:
                await tx.put_trigger(trigger)
            task = await outside_view(tx, task, self.state)
            await tx.update_task(task)
            await tx.append_event(
                Event(
                    task_id=self.task_id,
                    kind="waiting",
                    message=message,
                    display_message=f"waiting ({reason}): {message}",
                    data={"reason": str(reason), **(data or {})},
                )
            )
        self.task = task
        if crash_at is not None:
            crash_point(crash_at)
        raise TaskSuspended(reason, message)

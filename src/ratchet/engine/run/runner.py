"""Running one task under a lease: claim, heartbeat, replay and run, record how it ended."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import JsonValue
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ...errors import (
    CannotResume,
    CodeUnavailable,
    DeadlineExceeded,
    LeaseLost,
    OperationFailed,
    StoreError,
    TaskStopped,
)
from ...observe.runs import RunReport
from ...records import Event, Lease, Severity, StepStatus, Task, TaskStatus, WaitReason, utcnow
from ...store import StateStore
from ...trust.code import CodeTrust, enforced_trust
from ...trust.seal import SigningKey, sealed_inputs
from ...trust.workspace import confined_workspace
from ..calls import TaskSuspended, WorkerStopping
from ..calls.in_flight import bounded, cut_short, run_holding_stops
from ..children import wake_parent
from ..code_version import code_version, compatible_versions_allowed, configured_code_version
from ..context import ApprovalHook, Context
from ..current import running_in
from ..people import require_approval
from ..queued_patches import outside_view
from ..scripts import refuse_while_loading
from ..workflow import Workflow, load_workflow
from .code_wait import wait_for_code
from .holders import WorkerIdentity, holder_is_gone
from .staleness import judge_staleness, set_aside_stale
from .versions import settle_version

__all__ = ["claim_as", "run_task"]

DEFAULT_LEASE_TTL = 30.0


async def run_task(
    store: StateStore,
    task_id: str,
    *,
    worker: WorkerIdentity | None = None,
    lease_ttl: float = DEFAULT_LEASE_TTL,
    take_over: bool = False,
    load: Callable[[str], Workflow] = load_workflow,
    approval_hook: ApprovalHook | None = require_approval,
    lease: Lease | None = None,
    stopping: asyncio.Event | None = None,
    trust: CodeTrust | None = None,
    force: bool = False,
    key: SigningKey | None = None,
    compatible_versions: bool | None = None,
    claimed: Callable[[Lease], None] | None = None,
) -> Task:
    """Claim the task, run its workflow until it ends or waits, and let it go.

    Returns the task as it was left. A task that ended, or waits on a person,
    is returned untouched (one waiting for its code is tried again). A task
    whose lease is held by a process of this host that no longer exists is
    taken over at once (`holder_is_gone`), and its start or resume event
    says so. Tool calls whose risk level the task's constraints list wait
    for a person (`approval_hook`; None lets every call run). A `lease`
    already claimed (`claim_tasks`) is used instead of claiming one.
    When `stopping` is set, the workflow stops before its next live call and
    the task is returned as it stands, for another worker to resume. The
    task's code is loaded only as `trust` admits (default: the one enforced
    here, else `CodeTrust.here()`), and its workspace only under the
    workspace root; if either is refused or missing, the task is returned
    ``waiting(code)``. Before any of that, its code references must hold the
    seal its creator made (`key`, default this process's): a task a database
    writer made or changed is returned ``waiting(code)`` too. A task that
    started on another version of its code than this one is run only with
    `compatible_versions` (default: ``RATCHET_COMPATIBLE_VERSIONS``) and a
    replay check that passes; else it is returned ``waiting(code)`` for a
    worker of its version (`ratchet.engine.run.versions`). `claimed` is told
    the lease the run holds, once it holds it (a worker takes its task back
    under it after the store failed: `ratchet.engine.run.outage`).

    A task that already ran is validated first: older than its checkpoint
    policy's ``max_age``, it is set aside ``waiting(stale)`` and returned
    (`ratchet.engine.run.staleness`), unless `force`; `force` also runs a task
    set aside so.

    A store that fails while the task runs (a full disk, a read-only
    database, a lost server) is not the task's failure: the task is left as
    the store last recorded it, resumable, with a ``store_failed`` event if
    the store still takes one, and the `StoreError` is raised.

    Raises:
        CannotResume: another live worker holds the task.
        LeaseLost: another worker took the task over while this one ran it.
        StoreError: the store failed; the task stays resumable once it is fixed.
        InputError: this process's signing key is unusable, or
            ``RATCHET_CODE_VERSION`` or ``RATCHET_COMPATIBLE_VERSIONS`` holds
            no value they take (nothing is claimed).
        StartsWhenLoaded: code is being loaded for a task (a script without
            its ``__main__`` guard runs tasks when imported).
    """
    refuse_while_loading()
    key = key or SigningKey.from_environment()
    compatible = compatible_versions_allowed(compatible_versions)
    configured_code_version()
    worker = worker or WorkerIdentity()
    taken_from = None
    if lease is None:
        lease, taken_from = await _claim(store, task_id, worker, lease_ttl, take_over)
    if claimed is not None:
        claimed(lease)
    beat = _Heartbeat(store, lease, lease_ttl, asyncio.current_task())
    try:
        report = await RunReport.begin(store, task_id)  # spans and metrics, when on
        with (trust or enforced_trust() or CodeTrust.here()).enforced():
            async with beat:
                task = await _run_leased(
                    store,
                    task_id,
                    lease,
                    taken_from,
                    load,
                    approval_hook,
                    stopping,
                    force,
                    key,
                    compatible,
                )
        if report is not None:
            with contextlib.suppress(StoreError):  # the run is over as recorded; only its spans are lost
                await report.ended()
        return task
    except asyncio.CancelledError:
        if beat.lost is not None:
            raise beat.lost from None
        raise
    finally:
        # Results riding on the task's next write commit before the lease goes (unwritten, their
        # calls are in doubt, as after a crash). A store that cannot release it now lets it
        # expire: the task is resumable either way.
        with contextlib.suppress(LeaseLost, StoreError):
            await store.flush_riders(lease)
        store.drop_riders(lease)
        with contextlib.suppress(LeaseLost, StoreError):
            await store.release_lease(lease)


async def _claim(
    store: StateStore, task_id: str, worker: WorkerIdentity, lease_ttl: float, take_over: bool
) -> tuple[Lease, Lease | None]:
    """Claim the task's lease; return it, and the live lease of a dead holder it replaced, if any."""
    lease = await claim_as(store, task_id, worker, lease_ttl, take_over=take_over)
    if lease is not None:
        return lease, None
    held = await store.get_lease(task_id)
    if held is not None and holder_is_gone(held):
        # The holder was a process on this host that no longer exists: no need to wait out its
        # lease. Only that lease is replaced: another process that took it over first keeps it.
        lease = await claim_as(store, task_id, worker, lease_ttl, replacing=held.token)
        if lease is not None:
            return lease, held
        held = await store.get_lease(task_id)
    raise CannotResume(_held_message(task_id, held))


async def claim_as(
    store: StateStore,
    task_id: str,
    worker: WorkerIdentity,
    lease_ttl: float,
    *,
    take_over: bool = False,
    replacing: int | None = None,
) -> Lease | None:
    """Claim `task_id`'s lease for `worker` (the run's claim, and a worker taking back a task the
    store stopped: outage.py); None when refused."""
    return await store.claim_lease(
        task_id,
        worker.name,
        lease_ttl,
        host=worker.host,
        pid=worker.pid,
        pid_space=worker.pid_space,
        pid_started=worker.pid_started,
        take_over=take_over,
        replacing=replacing,
    )


def _started_data(lease: Lease, taken_from: Lease | None) -> dict[str, JsonValue]:
    data: dict[str, JsonValue] = {"worker": lease.owner, "token": lease.token}
    if taken_from is not None:
        data["taken_over_from"] = taken_from.owner
    return data


def _taken_over(held: Lease) -> str:
    return (
        f", taken over from {held.owner} (pid {held.pid} on {held.host}), which no longer runs, "
        f"before its lease expired at {held.expires_at:%Y-%m-%d %H:%M:%S} UTC"
    )


def _held_message(task_id: str, lease: Lease | None) -> str:
    if lease is None:
        return f"task {task_id} could not be claimed; try again"
    return (
        f"task {task_id} is held by worker {lease.owner} (pid {lease.pid} on {lease.host or '?'}) "
        f"until {lease.expires_at:%Y-%m-%d %H:%M:%S} UTC; stop that worker or wait for its lease to expire"
    )


class _Heartbeat:
    """Renews the lease every third of its time to live; cancels the run if the lease is lost
    (not if this run released it: a task that waits on children lets go as it suspends)."""

    def __init__(self, store: StateStore, lease: Lease, ttl: float, run: asyncio.Task[Any] | None) -> None:
        self.store, self.lease, self.ttl, self.run = store, lease, ttl, run
        self.lost: LeaseLost | None = None
        self._beat: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Heartbeat:
        self._beat = asyncio.create_task(self._renew())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._beat is not None
        self._beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._beat

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                self.lease = await self.store.renew_lease(self.lease, self.ttl)
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    # Stopped while it waited for a pooled connection that came at that moment:
                    # the pool waits with asyncio.wait_for, which on Python 3.11 returns what came
                    # and swallows the cancellation; the run's end would wait on this beat for good.
                    raise asyncio.CancelledError
            except LeaseLost as lost:
                if await self._let_go_here():
                    return  # this run let the lease go itself, as it began to wait on children
                self.lost = lost
                if self.run is not None:  # another worker may run the call in flight now: cut it
                    cut_short(self.run)
                return
            except Exception:  # a store hiccup: the next beat tries again
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    # Stopped as the run ended, mid-renewal: a store that turned the cancellation
                    # into its own error must not keep the beat (and the lease) alive for good.
                    raise asyncio.CancelledError from None
                continue

    async def _let_go_here(self) -> bool:
        try:
            held = await self.store.get_lease(self.lease.task_id)
        except Exception:
            return False
        return held is not None and held.token == self.lease.token and held.released


async def _run_leased(
    store: StateStore,
    task_id: str,
    lease: Lease,
    taken_from: Lease | None,
    load: Callable[[str], Workflow],
    approval_hook: ApprovalHook | None,
    stopping: asyncio.Event | None,
    force: bool,
    key: SigningKey,
    compatible_versions: bool,
) -> Task:
    task = await store.get_task(task_id)
    waits_on_person = task.waiting_on is not None and task.waiting_on.needs_person
    forced = force and task.waiting_on is WaitReason.STALE
    if task.status.is_terminal or (waits_on_person and task.waiting_on is not WaitReason.CODE and not forced):
        return task
    if task.queue is not None and not await store.queue_turn(lease):
        return task  # its queue is full: the lease is given back, and a claim takes it when a place frees
    if not task.workflow:
        raise CannotResume(f"task {task_id} names no workflow to run")
    try:
        covered = key.check(task)  # before its code is so much as looked for
        workflow = load(task.workflow)
        sealed_inputs(workflow.code_inputs, covered, task.workflow)
        if task.workspace is not None:
            confined = str(confined_workspace(task.id, task.workspace))
            if confined != task.workspace:  # its own directory under this root: sealed as it now is
                task = key.seal(task.model_copy(update={"workspace": confined}), covered)
        workflow.tools_for(task, store)  # its tools load now, before anything is written, or it waits
        if task.model:  # so does a scripted model's script (docs/providers.md)
            from ...providers.scripted import require_script  # else loaded at the first model call

            require_script(task.model)
    except CodeUnavailable as problem:
        return await wait_for_code(store, task, lease, problem)
    mine = code_version(workflow, task.inputs_params)  # made once per workflow in this process
    task, here = await settle_version(
        store, task, lease, mine, compatible=compatible_versions, load=load, trust=enforced_trust()
    )
    if not here:
        return task
    if not force:
        stale = await judge_staleness(store, task, workflow.checkpoint_for(task))
        if stale is not None:
            return await set_aside_stale(store, task, lease, stale)
    workflow = workflow.for_task(task)  # with the task's own checkpoint policy, if it has one
    resumed = task.started_at is not None
    running = (
        task
        if task.status is TaskStatus.RUNNING
        else task.transition(TaskStatus.RUNNING, started_at=task.started_at or utcnow())
    )
    async with store.transaction(fence=lease) as tx:
        await tx.update_task(running)
        # This run answers every queued wake-up; a pause re-queues its own.
        await tx.delete_triggers(task_id)
        await tx.append_event(
            Event(
                task_id=task_id,
                kind="task_resumed" if resumed else "task_started",
                message=f"task {'resumed' if resumed else 'started'} by {lease.owner}"
                + (", forced past its stale checkpoint" if forced else "")
                + ("" if taken_from is None else _taken_over(taken_from)),
                display_message=f"{'Resumed' if resumed else 'Started'} {running.name}",
                data=_started_data(lease, taken_from),
            )
        )
        recorded = await tx.list_ops(task_id)
        steps = await tx.list_steps(task_id)
    context = Context(
        store=store,
        task=running,
        lease=lease,
        workflow=workflow,
        recorded=recorded,
        steps=steps,
        approval_hook=approval_hook,
        stopping=stopping,
    )
    try:
        try:
            workflow_run = workflow.fn(context, **workflow.signature.typed_inputs(running.inputs_params))
            # A stop while a tool with side effects runs waits for it (in_flight.py): one shield a run.
            result = await run_holding_stops(
                context.in_flight, _within_deadline(context, running_in(context, workflow_run))
            )
        except (TaskSuspended, WorkerStopping):
            await context.close_streams()
            return context.task
        except (LeaseLost, asyncio.CancelledError):
            raise
        except SystemExit as exit_:  # out of the event loop it would stop every task of the process
            return await _finish(
                context,
                TaskStatus.FAILED,
                error=f"the workflow exited instead of raising (SystemExit: {exit_.code})",
            )
        except Exception as error:
            failure = _store_failure(error)
            if failure is error:
                raise
            if failure is not None:
                raise failure from None  # the store's error is the one to report, not the wrapper
            if isinstance(error, (TaskStopped, OperationFailed)):
                return await _finish(context, TaskStatus.FAILED, error=str(error))
            return await _finish(context, TaskStatus.FAILED, error=f"{type(error).__name__}: {error}")
        return await _finish(context, TaskStatus.COMPLETED, result=result)
    except StoreError as failure:  # met by the workflow, or while recording how the task ended
        await _say_store_failed(context, failure)
        raise


def _store_failure(error: BaseException) -> StoreError | None:
    """The store error behind `error`, if it is one or was raised while handling one.

    Code that catches a store error and raises its own (a workflow's
    ``except Exception: raise ...``) still failed because of the store.
    """
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, StoreError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


async def _say_store_failed(context: Context, failure: StoreError) -> None:
    """Record, if the store still takes a write, that the store stopped the task (not how it ended)."""
    task_id = context.task.id
    event = Event(
        task_id=task_id,
        kind="store_failed",
        severity=Severity.ERROR,
        message=(
            f"the store failed while the task ran ({failure.message}); the task stays resumable: "
            f"`ratchet resume {task_id}` continues it once the store is fixed"
        ),
        display_message=f"Stopped: the store failed ({failure.message})",
        data={"error_type": type(failure).__name__},
    )
    with contextlib.suppress(StoreError, LeaseLost):
        async with context.store.transaction(fence=context.lease) as tx:
            await tx.append_event(event)


async def _within_deadline(context: Context, work: Awaitable[Any]) -> Any:
    deadline = context.task.deadline
    if deadline is None:
        return await work
    remaining = (deadline - utcnow()).total_seconds()
    try:
        async with bounded(max(remaining, 0)) as scope:
            return await work
    except TimeoutError as error:
        if scope.expired():
            raise DeadlineExceeded(
                f"deadline exceeded (the task's deadline was {deadline:%Y-%m-%d %H:%M:%S} UTC)"
            ) from error
        raise


async def _finish(
    context: Context, status: TaskStatus, *, result: Any = None, error: str | None = None
) -> Task:
    await context.close_streams()  # its stream whole before it ends: a reader that sees it ended has all
    try:
        result = to_jsonable_python(result)
    except PydanticSerializationError as problem:
        status, result, error = TaskStatus.FAILED, None, f"the workflow returned a non-JSON value: {problem}"
    task = context.task.transition(status, result=result, error=error, cost=context.budget.cost)
    if status is TaskStatus.COMPLETED:
        event = Event(
            task_id=task.id,
            kind="task_completed",
            message="task completed",
            display_message=f"Completed {task.name}",
            data={"result": result},
        )
    else:
        event = Event(
            task_id=task.id,
            kind="task_failed",
            severity=Severity.ERROR,
            message=f"task failed: {error}",
            display_message=f"Failed: {error}",
        )
    async with context.store.transaction(fence=context.lease) as tx:
        task = await outside_view(tx, task, context.state)
        await tx.update_task(task)
        await tx.delete_triggers(task.id)
        if status is TaskStatus.FAILED:
            await _close_open_steps(tx, task.id, error)
        await tx.append_event(event)
        await wake_parent(tx, task)
    context.task = task
    return task


async def _close_open_steps(tx: Any, task_id: str, error: str | None) -> None:
    """A failed task leaves no step open: the current one failed with it, the rest are cancelled."""
    steps = await tx.list_steps(task_id)
    if all(step.status.is_terminal for step in steps):
        return
    closed = [
        step.transition(StepStatus.FAILED, failure_message=error)
        if step.status is StepStatus.CURRENT
        else step.transition(StepStatus.CANCELLED)
        if step.status is StepStatus.PENDING
        else step
        for step in steps
    ]
    await tx.replace_steps(task_id, closed)
    for step in steps:
        if step.status is StepStatus.CURRENT:
            await tx.append_event(
                Event(
                    task_id=task_id,
                    kind="step_failed",
                    severity=Severity.ERROR,
                    message=f"step {step.index + 1} failed: {step.name}: {error}",
                )
            )

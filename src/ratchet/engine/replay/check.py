"""Replay one task's journal in a copy held in memory, against the code installed now."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from pydantic_core import PydanticSerializationError, to_jsonable_python

from ...errors import InputError, InvalidInputs, NonDeterminismError, TaskStopped
from ...records import Operation, OpKind, TaskStatus
from ...store import StateStore
from ...trust.code import CodeTrust, enforced_trust
from ...trust.seal import SigningKey, sealed_inputs
from ..calls import TaskSuspended
from ..context import Context
from ..current import running_in
from ..workflow import Workflow, load_workflow
from . import verdicts
from .frontier import ReplayDiverged, ReplayFrontier, replay_only
from .outcome import Divergence, ReplayOutcome
from .recorded import Recorded, read_recorded, replay_copy

__all__ = ["replay_check_task"]


async def replay_check_task(
    store: StateStore,
    task_id: str,
    *,
    load: Callable[[str], Workflow] = load_workflow,
    trust: CodeTrust | None = None,
    key: SigningKey | None = None,
) -> ReplayOutcome:
    """Replay task `task_id`'s journal from `store` against the code `load` finds now; write nothing.

    The task's code is loaded as ``ratchet resume`` loads it: only what
    `trust` admits (default: the trust enforced here, else
    `CodeTrust.here()`), and only when its code references hold the seal
    `key` checks (default: this process's key). Code refused or missing,
    or inputs the workflow no longer takes, are the outcome's `problem`.

    The run stops at the first call the journal cannot answer (nothing of
    it runs), and at a wait (a person, a timer, child tasks): everything
    recorded replayed. A task that completed is held to its whole journal
    and its result: a call past its end, or another result, diverges.

    Raises:
        TaskNotFound: no task has that id.
    """
    recorded = await read_recorded(store, task_id)
    if not recorded.task.workflow:
        return ReplayOutcome(task_id, 0, problem=f"task {task_id} names no workflow to replay")
    key = key or SigningKey.from_environment()
    with (trust or enforced_trust() or CodeTrust.here()).enforced():
        return await _check(recorded, recorded.task.workflow, load, key)


async def _check(
    recorded: Recorded, reference: str, load: Callable[[str], Workflow], key: SigningKey
) -> ReplayOutcome:
    task = recorded.task
    try:
        covered = key.check(task)  # before its code is so much as looked for, as a run does
        workflow = load(reference)
        sealed_inputs(workflow.code_inputs, covered, reference)
        workflow = workflow.for_task(task)
        copy, running, lease = await replay_copy(recorded)
        context = Context(
            store=copy,
            task=running,
            lease=lease,
            workflow=workflow,  # its tools load here: refused or missing, they are the problem too
            recorded=recorded.ops,
            steps=recorded.steps,
        )
        inputs = workflow.signature.typed_inputs(running.inputs_params)
    except InvalidInputs as wrong:  # a resume would fail the task at once
        return ReplayOutcome(task.id, 0, problem=f"the workflow no longer takes the task's inputs: {wrong}")
    except InputError as refused:  # its code refused or missing here (CodeUnavailable), its tools unusable
        return ReplayOutcome(task.id, 0, problem=refused.message)
    _guard_calls(context)
    completed = task.status is TaskStatus.COMPLETED
    if completed:
        # A completed run recorded all it did: past its journal the code took its old path
        # (`ctx.patched` is False there), and any call is one the run never made.
        context.journal.last_recorded_seq = sys.maxsize
    try:
        returned = await running_in(context, workflow.fn(context, **inputs))
    except ReplayFrontier as frontier:
        past_the_end = verdicts.call_after_the_end(frontier.seq, frontier.requested) if completed else None
        return _outcome(recorded, frontier.seq, past_the_end)
    except ReplayDiverged as differs:
        return _outcome(
            recorded, differs.seq, verdicts.another_call(differs.seq, differs.recorded, differs.requested)
        )
    except TaskSuspended:
        return _outcome(recorded, context.next_seq)
    except Exception as error:
        return _failed(recorded, context, error)
    except SystemExit as exit_:  # as a run takes it: the workflow's failure, not the checker's end
        return _failed(recorded, context, RuntimeError(f"the workflow exited (SystemExit: {exit_.code})"))
    return _returned(recorded, context, returned)


def _guard_calls(context: Context) -> None:
    """Put `replay_only` around the context's whole call chain, outside every layer of it.

    The chain is built in the context and handed to its model calls, both
    as the private `_chain`, and a tool call's as `_tool_chain`: wrapping
    those is the outermost place there is (a middleware given to the context
    would run inside the observing and events layers and the workflow's own
    middleware).
    """
    guarded = functools.partial(replay_only, proceed=context._chain)
    context._chain = guarded
    context._models._chain = guarded
    context._tool_chain = functools.partial(replay_only, proceed=context._tool_chain)


def _failed(recorded: Recorded, context: Context, error: Exception) -> ReplayOutcome:
    """The workflow raised `error` while its journal replayed."""
    differs = _nondeterminism(error)
    if differs is not None:
        divergence = verdicts.another_call(differs.seq, differs.recorded, differs.requested)
        return _outcome(recorded, differs.seq, divergence)
    position = context.next_seq
    if isinstance(error, TaskStopped):
        return _outcome(recorded, position)  # a budget or deadline ran out: the clock's doing, not the code's
    ahead = _ahead(recorded, position)
    if ahead is not None:
        divergence = verdicts.ended_early(ahead.seq, verdicts.described(ahead), verdicts.failure(error))
        return _outcome(recorded, position, divergence)
    status = recorded.task.status
    if status is TaskStatus.COMPLETED:
        divergence = verdicts.another_result(
            position, verdicts.result(recorded.task.result), verdicts.failure(error)
        )
        return _outcome(recorded, position, divergence)
    if status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        return _outcome(recorded, position)  # it ended as it ended
    divergence = verdicts.ended_early(position, verdicts.NOTHING, verdicts.failure(error))
    return _outcome(recorded, position, divergence)


def _returned(recorded: Recorded, context: Context, returned: object) -> ReplayOutcome:
    """The workflow returned `returned` having replayed its journal."""
    position = context.next_seq
    ahead = _ahead(recorded, position)
    if ahead is not None:
        return _outcome(recorded, position, verdicts.ended_early(ahead.seq, verdicts.described(ahead)))
    task = recorded.task
    if task.status is not TaskStatus.COMPLETED:
        return _outcome(recorded, position)
    try:
        value = to_jsonable_python(returned)
    except PydanticSerializationError:
        value = None
        now = "a result that is not JSON"
    else:
        now = verdicts.result(value)
    if now != "a result that is not JSON" and value == task.result:
        return _outcome(recorded, position)
    return _outcome(recorded, position, verdicts.another_result(position, verdicts.result(task.result), now))


def _ahead(recorded: Recorded, position: int) -> Operation | None:
    """The first call the journal holds at or after `position` (patch markers no code asks for aside)."""
    left = [op for op in recorded.ops if op.seq >= position and op.kind is not OpKind.PATCH]
    return min(left, key=lambda op: op.seq) if left else None


def _nondeterminism(error: BaseException) -> NonDeterminismError | None:
    """The `NonDeterminismError` behind `error`, even when the workflow raised its own on catching it."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, NonDeterminismError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _outcome(recorded: Recorded, position: int, divergence: Divergence | None = None) -> ReplayOutcome:
    """The outcome of a check that reached `position`: the finished operations before it replayed."""
    replayed = sum(1 for op in recorded.ops if op.seq < position and op.is_finished and not op.retry_pending)
    return ReplayOutcome(recorded.task.id, replayed, divergence)

"""New tasks from an old task's journal: a fork from a checkpoint or a step, a retry from where it failed.

Both copy the old task's journal up to a point into a new task, which
replays that far and runs live from there (docs/durability.md, "Fork and
retry"). The old task keeps its record; a retry only adds an event to it
saying which task retries it. A fork may change what the new task starts
from: its model, instruction, inputs, or tool results it replays
(`ratchet.runtime.what_if`).

Where a retry starts: at the beginning of a step (the failed one, or the one
a person names), because a step's failure is itself journaled (the agent's
check answers), so replaying up to the failure would fail again. A plain
workflow without a named step starts again at the call that failed for
good, or, if its code raised, replays its whole journal so that fixed code
carries on. Every operation records the step it ran in (``meta["step"]``);
a step begins at the first operation of its last unbroken run.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from ..agent import AGENT_WORKFLOW
from ..errors import CannotRetry, DuplicateRecord, InputError
from ..limits import MAX_INSTRUCTION_BYTES
from ..records import (
    AgentState,
    Event,
    Operation,
    OpKind,
    OpStatus,
    StatePatch,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    Trigger,
    utcnow,
)
from ..store import StateStore, StoreOps
from ..trust.seal import SigningKey
from .what_if import WhatIf

__all__ = ["RetryPoint", "fork_task", "retry_point", "retry_task"]

_RETRY_SUFFIX = re.compile(r"^(?P<root>.+)-retry(?P<n>\d+)$")
MAX_RETRY_IDS = 1000


@dataclass(frozen=True)
class RetryPoint:
    """Where a retry starts.

    Attributes:
        seq: the first operation not copied: the new task runs live from here.
        step: the index of the step it starts in (from 0), or None before any step.
    """

    seq: int
    step: int | None


# --------------------------------------------------------------------------- fork


async def fork_task(
    store: StateStore,
    task_id: str,
    checkpoint: int | None = None,
    *,
    step: int | None = None,
    what_if: WhatIf | None = None,
    max_instruction_bytes: int = MAX_INSTRUCTION_BYTES,
) -> str:
    """Start a new task from one of a task's checkpoints, or the start of a step; return its id.

    From `checkpoint`, the new task keeps the journal up to the checkpoint's
    last operation, and its steps and state. From `step` (from 1), it keeps
    what ``ratchet retry --from-step`` keeps: the journal before the step's
    first operation, the steps before it as they were, the step current
    again (an agent's later steps pending, a workflow's dropped), the state
    its kept journal rebuilds. `what_if` changes it further (see
    `ratchet.runtime.what_if`); see `Runtime.fork`.

    Raises:
        InputError: neither or both of `checkpoint` and `step`; the task reached
            no such step; an override is refused (`WhatIf`).
        CheckpointNotFound: the task has no such checkpoint.
    """
    if (checkpoint is None) == (step is None):
        raise InputError(
            "fork from one point: give a checkpoint or a step (each from 1)"
            + (", not both" if checkpoint is not None else "")
        )
    what_if = what_if or WhatIf()
    original = await store.get_task(task_id)
    changes = what_if.task_changes(original, max_instruction_bytes=max_instruction_bytes)
    data: dict[str, JsonValue] = {"from": task_id}
    if checkpoint is not None:
        saved = await store.get_checkpoint(task_id, checkpoint)
        last_seq, steps, state = saved.last_seq, saved.steps, saved.state
        ops = [op for op in await store.list_ops(task_id) if op.seq <= last_seq]
        data["checkpoint"] = checkpoint
        where, name = f"checkpoint {checkpoint} (operation {last_seq})", f"fork{checkpoint}"
    else:
        assert step is not None
        async with store.reading() as tx:
            recorded_steps = await tx.list_steps(task_id)
            recorded = await tx.list_ops(task_id)
        try:
            point = retry_point(original, recorded_steps, recorded, step, doing="fork")
        except CannotRetry as refused:  # bad input here, not a task in the wrong state (a 400, not a 409)
            raise InputError(str(refused)) from None
        ops = [op for op in recorded if op.seq < point.seq]
        last_seq, steps, state = (
            point.seq - 1,
            _steps_for_retry(original, recorded_steps, point),
            _state_at(original, ops),
        )
        data["step"] = step
        named = {s.index: s.name for s in recorded_steps}
        kept = f"operations 0 to {last_seq} kept" if last_seq >= 0 else "no operation kept"
        where = f"the start of step {step} ({named.get(step - 1, '?')}; {kept})"
        name = f"fork-step{step}"
    ops = what_if.override_ops(task_id, ops, last_seq)
    new_id = f"{task_id}-{name}-{uuid.uuid4().hex[:6]}"
    forked = _new_attempt(original, new_id, state, workspace=None, changes=changes)
    data["last_seq"] = last_seq
    if what_if.inputs:
        names: list[JsonValue] = [*sorted(what_if.inputs)]
        data["changed_inputs"] = names
    overrides, said = what_if.describe(original, forked, ops)
    if overrides:
        data["overrides"] = overrides
    if what_if.inputs:
        said.append(f"inputs {', '.join(sorted(what_if.inputs))} changed")
    async with store.transaction() as tx:
        await _write_branch(tx, forked, steps, ops, queue=True)
        await tx.append_event(
            Event(
                task_id=new_id,
                kind="task_forked",
                message=f"forked from task {task_id} at {where}"
                + (f", with {'; '.join(said)}" if said else ""),
                data=data,
            )
        )
    return new_id


# --------------------------------------------------------------------------- retry


async def retry_task(
    store: StateStore, task_id: str, *, from_step: int | None = None, queue: bool = True
) -> str:
    """Make a new task that retries a failed or cancelled one; return its id (see `Runtime.retry`).

    Raises:
        TaskNotFound: no task has that id.
        CannotRetry: the task has not ended, or completed; `from_step` names
            no step the task reached.
    """
    original = await store.get_task(task_id)
    if original.status not in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        if original.status is TaskStatus.COMPLETED:
            raise CannotRetry(f"task {task_id} completed; there is nothing to retry")
        raise CannotRetry(
            f"task {task_id} is {original.status_text}, not failed or cancelled; "
            f"`ratchet resume {task_id}` carries it on (or cancel it first to retry it)"
        )
    async with store.reading() as tx:
        steps = await tx.list_steps(task_id)
        ops = await tx.list_ops(task_id)
    point = retry_point(original, steps, ops, from_step)
    kept = [op for op in ops if op.seq < point.seq]
    state = _state_at(original, kept)
    for attempt in range(MAX_RETRY_IDS):
        retry = _new_attempt(original, _retry_id(original, attempt), state, workspace=original.workspace)
        try:
            async with store.transaction() as tx:
                await _write_branch(tx, retry, _steps_for_retry(original, steps, point), kept, queue=queue)
                await _tell_retry(tx, original, retry.id, point, steps)
        except DuplicateRecord:
            continue  # that id is taken (an earlier retry): the next number
        return retry.id
    raise CannotRetry(f"task {task_id} has been retried {MAX_RETRY_IDS} times; retry its newest retry")


def retry_point(
    task: Task,
    steps: Sequence[Step],
    ops: Sequence[Operation],
    from_step: int | None,
    *,
    doing: str = "retry",
) -> RetryPoint:
    """Where a retry of `task` starts, given its steps and journal; `from_step` counts from 1.

    A fork from a step starts where a retry from that step would (`doing`
    names which, in the error).

    Raises:
        CannotRetry: `from_step` names no step the task reached.
    """
    ordered = sorted(ops, key=lambda op: op.seq)
    stopped_in = _stopped_in(steps)
    if from_step is not None:
        reached = min(stopped_in + 1, len(steps))
        if not 1 <= from_step <= reached:
            raise CannotRetry(
                f"task {task.id} has no step {from_step} to {doing} from; "
                + (f"give a step from 1 to {reached}" if reached else "it stopped before its first step")
            )
        return RetryPoint(_step_start(task, from_step - 1, ordered), from_step - 1)
    if task.workflow == AGENT_WORKFLOW and not steps:
        return RetryPoint(0, None)  # its planning failed: it plans again
    index = stopped_in if stopped_in < len(steps) else None
    if task.status is TaskStatus.CANCELLED or not ordered:
        # Nothing failed: it carries on where it was stopped; a call in flight then stays in doubt.
        return RetryPoint(ordered[-1].seq + 1 if ordered else 0, index)
    if task.workflow == AGENT_WORKFLOW:
        # The agent's failures are journaled answers: it starts again at the step it stopped in.
        return RetryPoint(
            _step_start(task, index, ordered) if index is not None else ordered[-1].seq + 1, index
        )
    last = ordered[-1]
    if last.status is OpStatus.FAILED and not last.retry_pending:
        return RetryPoint(last.seq, _step_of(last))  # the call that failed for good runs again
    return RetryPoint(last.seq + 1, index)  # the code raised: it runs again over the whole journal


def _stopped_in(steps: Sequence[Step]) -> int:
    """The index of the step the task stopped in: its first step not done (or one past the last)."""
    done = (StepStatus.COMPLETED, StepStatus.SKIPPED)
    for step in sorted(steps, key=lambda s: s.index):
        if step.status not in done:
            return step.index
    return len(steps)


def _step_of(op: Operation) -> int | None:
    step = op.meta.get("step")
    return step if isinstance(step, int) else None


def _step_start(task: Task, index: int, ops: Sequence[Operation]) -> int:
    """The seq where step `index` began: the first operation of its last unbroken run of operations.

    A step that made no operation (it stopped at once: a budget, say) began
    where the next step's operations begin, or at the end of the journal.

    Raises:
        CannotRetry: no operation records its step (a journal of an older Ratchet).
    """
    start: int | None = None
    previous: int | None = None
    for op in ops:
        step = _step_of(op)
        if step == index and (start is None or previous != index):
            start = op.seq
        previous = step
    if start is not None:
        return start
    if task.workflow == AGENT_WORKFLOW and index == 0 and all(_step_of(op) is None for op in ops):
        return 0  # its planning failed (a placeholder first step), or it stopped before step 1's first call
    if index > 0 and ops and all(_step_of(op) is None for op in ops):
        raise CannotRetry(
            f"task {task.id}'s journal does not record its steps (an older Ratchet made it); "
            f"`ratchet fork {task.id} --checkpoint N` starts a new task from one of its checkpoints"
        )
    later = [op.seq for op in ops if (step := _step_of(op)) is not None and step > index]
    return min(later) if later else (ops[-1].seq + 1 if ops else 0)


def _state_at(task: Task, ops: Sequence[Operation]) -> AgentState:
    """The agent state the kept journal rebuilds (as the resumed context does), for people to see."""
    carried = [flag for flag in task.state.risk_flags if flag == "budget_pressure"]
    state = AgentState(goal=task.goal, budget=task.budget, risk_flags=carried)
    for op in ops:
        if op.kind is OpKind.STATE and op.status is OpStatus.SUCCEEDED:
            state = StatePatch.model_validate(op.input).apply(state)
    return state


def _steps_for_retry(task: Task, steps: Sequence[Step], point: RetryPoint) -> list[Step]:
    """The steps the retry starts with: those before its step as they were, its step current again.

    The agent's later steps (its plan) wait as pending; a plain workflow's
    are dropped, since its ``ctx.step`` makes them again as it reaches them.
    """
    if point.step is None:
        return [s for s in steps if s.status in (StepStatus.COMPLETED, StepStatus.SKIPPED)]
    fresh = {"failure_message": None, "attempts": 0}
    kept: list[Step] = []
    for step in sorted(steps, key=lambda s: s.index):
        if step.index < point.step:
            kept.append(step)
        elif step.index == point.step:
            kept.append(step.model_copy(update={**fresh, "status": StepStatus.CURRENT, "attempts": 1}))
        elif task.workflow == AGENT_WORKFLOW:
            kept.append(step.model_copy(update={**fresh, "status": StepStatus.PENDING}))
    return kept


def _retry_id(original: Task, attempt: int) -> str:
    """``<id>-retry1`` for a first retry; a retry of a retry counts on: ``<id>-retry2``."""
    found = _RETRY_SUFFIX.match(original.id) if original.forked_from else None
    root, number = (found["root"], int(found["n"])) if found else (original.id, 0)
    return f"{root}-retry{number + 1 + attempt}"


async def _tell_retry(
    tx: StoreOps, original: Task, new_id: str, point: RetryPoint, steps: Sequence[Step]
) -> None:
    named = {s.index: s.name for s in steps}
    where = (
        f"step {point.step + 1} ({named.get(point.step, '?')})"
        if point.step is not None
        else f"operation {point.seq}"
    )
    data: dict[str, JsonValue] = {"from": original.id, "retry": new_id, "seq": point.seq, "index": point.step}
    await tx.append_event(
        Event(
            task_id=new_id,
            kind="task_retry",
            message=f"retry of task {original.id}: operations 0 to {point.seq - 1} replay, "
            f"it runs live from {where}",
            display_message=f"Retry of {original.id} from {where}",
            data=data,
        )
    )
    await tx.append_event(
        Event(
            task_id=original.id,
            kind="retried",
            message=f"retried as task {new_id}, from {where}",
            data=data,
        )
    )


# --------------------------------------------------------------------------- the new task


def _new_attempt(
    original: Task,
    new_id: str,
    state: AgentState,
    *,
    workspace: str | None,
    changes: Mapping[str, object] | None = None,
) -> Task:
    """A queued copy of `original` under `new_id`: no outcome, no deadline (an absolute time, likely past).

    `changes` (a fork's overrides) are made before the copy is sealed, so its
    seal covers its own model and inputs.

    Raises:
        InputError: this process's signing key is unusable.
    """
    now = utcnow()
    copy = original.model_copy(
        update={
            "id": new_id,
            "status": TaskStatus.QUEUED,
            "waiting_on": None,
            "result": None,
            "error": None,
            "state": state,
            "forked_from": original.id,
            "created_at": now,
            "updated_at": now,
            "started_at": None,
            "workspace": workspace,
            "deadline": None,
            "write_mark": None,
            "cost": 0.0,  # its run counts again what the journal it replays cost (labels are kept)
            "parent_id": None,  # a new attempt of a child is nobody's child: no parent waits on it
            **(changes or {}),
        }
    )
    # Sealed again for its own id, if the original's seal holds (a forged original stays unsealed).
    return SigningKey.from_environment().reseal(original, Task.model_validate(copy.model_dump()))


async def _write_branch(
    tx: StoreOps, task: Task, steps: Sequence[Step], ops: Sequence[Operation], *, queue: bool
) -> None:
    """Create `task` with `steps` and a copy of `ops` as its journal, each as it stood (in doubt too)."""
    await tx.create_task(task)
    await tx.replace_steps(task.id, [s.model_copy(update={"task_id": task.id}) for s in steps])
    for op in ops:
        copy = op.model_copy(update={"task_id": task.id})
        if op.status is OpStatus.STARTED:
            await tx.record_op_started(copy)
        else:
            await tx.record_op_finished(copy)
    if queue:
        await tx.put_trigger(Trigger(kind="start", task_id=task.id, dedupe_key=f"{task.id}:start"))

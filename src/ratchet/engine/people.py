"""People in the loop: approvals of risky tool calls, and questions (docs/people.md).

A tool call whose risk level the task's constraints list
(``state.constraints.human_in_the_loop.required_for_risk_levels``) waits for a
person: `require_approval`, the default approval hook, records a pending
`Approval` keyed like the journal by ``(task_id, seq)`` and suspends the task
``waiting(approval)``. A person settles it (`settle_approval`); the task is
then queued like any timer wake-up, and the call runs (with edited arguments
if given) or fails as denied, recorded in the journal. A replayed call never
asks again, and a decision, once written, holds across every restart.

Edited arguments are checked against the tool's arguments before they are
accepted (`check_edited_arguments`: the task's workflow is loaded to find the
tool). Where the tool's code cannot be loaded, they are accepted as a JSON
object and checked when the call runs: arguments that do not fit fail the
call, recorded in the journal, and the tool never runs with them.

Questions (``ctx.ask_user``, a LangGraph thread's ``interrupt()``) are journal
operations of kind ``question``: started when asked, finished by
`answer_question` with the person's answer. One whose ``meta`` says why it is
``unanswerable`` (nothing could go on with the answer) is refused with that.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from ..errors import (
    AlreadyDecided,
    ApprovalDenied,
    InputError,
    NonRetryableError,
    OperationFailed,
    StoreError,
    TaskNotFound,
)
from ..records import (
    Approval,
    ApprovalStatus,
    Event,
    Operation,
    OpKind,
    OpStatus,
    Severity,
    Task,
    TaskStatus,
    Trigger,
    WaitReason,
    utcnow,
)
from ..tools import Tool
from ..trust.seal import SigningKey, sealed_inputs
from .workflow import Workflow, load_workflow

if TYPE_CHECKING:
    from ..store import StateStore, StoreOps
    from .calls import Call
    from .context import Context

__all__ = [
    "APPROVAL_TIMEOUT_TRIGGER",
    "answer_question",
    "check_edited_arguments",
    "decided_not_run",
    "describe_wait",
    "expire_approval",
    "in_doubt_settlement",
    "pending_question",
    "question_text",
    "require_approval",
    "resolve_in_doubt",
    "settle_approval",
]

APPROVAL_TIMEOUT_TRIGGER = "approval_timeout"


# --------------------------------------------------------------------------- approvals


async def require_approval(ctx: Context, call: Call) -> None:
    """The approval hook: let the call run, or wait for a person, or fail it as denied.

    Raises:
        TaskSuspended: no decision yet; the task now waits ``waiting(approval)``.
        OperationFailed: a person denied the call (recorded as its outcome).
    """
    tool = call.tool
    required = ctx.state.constraints.human_in_the_loop.required_for_risk_levels
    if tool is None or tool.risk not in required:
        return
    approval = await ctx.store.get_approval(ctx.task_id, call.seq)
    if approval is None or approval.status is ApprovalStatus.PENDING:
        await _wait_for_approval(ctx, call, approval, [str(level) for level in required])
        return  # not reached: waiting unwinds the workflow
    if approval.status is ApprovalStatus.DENIED:
        denied = ApprovalDenied(f"denied by a person: {approval.reason or 'no reason given'}")
        op = await ctx.journal.record_outcome(call, error=denied)
        raise OperationFailed(call.name, call.seq, op.error_type or "", op.error or "") from denied
    if approval.edited_arguments is not None:
        call.input = dict(approval.edited_arguments)  # the journal and the events show what runs
        try:
            tool.validate(call.input)
        except NonRetryableError as bad:  # accepted unchecked: the tool's code was not where they were given
            refused = NonRetryableError(f"the arguments a person approved do not fit: {bad}")
            op = await ctx.journal.record_outcome(call, error=refused)
            raise OperationFailed(call.name, call.seq, op.error_type or "", op.error or "") from refused


async def _wait_for_approval(
    ctx: Context, call: Call, approval: Approval | None, required: list[str]
) -> None:
    assert call.tool is not None
    if approval is None:
        why = (
            f"{call.name} is an {call.tool.risk} tool, and the task's constraints need a "
            f"person's approval for {', '.join(required)}"
        )
        approval = await ctx.store.request_approval(
            Approval(
                task_id=ctx.task_id,
                seq=call.seq,
                tool=call.name,
                arguments=call.input,
                step=ctx.current_step,
                why=why,
            ),
            fence=ctx.lease,
        )
    trigger = None
    if ctx.task.approval_timeout is not None:
        trigger = Trigger(
            kind=APPROVAL_TIMEOUT_TRIGGER,
            task_id=ctx.task_id,
            payload={"seq": call.seq},
            fire_at=approval.requested_at + dt.timedelta(seconds=ctx.task.approval_timeout),
            dedupe_key=f"{ctx.task_id}:{APPROVAL_TIMEOUT_TRIGGER}:{call.seq}",
        )
    await ctx.suspend(
        WaitReason.APPROVAL,
        f"{call.describe()} (operation {call.seq}) waits for a person's approval: {approval.why}; "
        f"settle it with `ratchet approve {ctx.task_id}` or `ratchet deny {ctx.task_id} --reason TEXT`",
        data={"seq": call.seq, "tool": call.name, "arguments": call.input, "step": approval.step},
        trigger=trigger,
    )


async def check_edited_arguments(
    store: StateStore,
    task_id: str,
    edit_args: dict[str, JsonValue],
    *,
    load: Callable[[str], Workflow] = load_workflow,
) -> str | None:
    """Check a person's edited arguments against the tool the task's call waits to run.

    Returns None when they were checked, or why they could not be checked
    here (the tool's code does not load in this process); then the call
    checks them when it runs.

    Raises:
        InputError: they do not fit the tool's arguments; nothing is changed.
    """
    _, unchecked = await _check_edits(store, task_id, edit_args, load)
    return unchecked


async def _check_edits(
    store: StateStore, task_id: str, edit_args: dict[str, JsonValue], load: Callable[[str], Workflow]
) -> tuple[int | None, str | None]:
    """`check_edited_arguments`, also returning the seq of the call they were checked for."""
    task = await store.get_task(task_id)
    pending = await store.list_approvals(task_id, pending_only=True)
    if not pending:
        return None, None  # `settle_approval` says what the task waits for instead
    approval = pending[0]
    tool, unloaded = _tool_of(task, approval.tool, store, load)
    if tool is None:
        return approval.seq, unloaded
    try:
        tool.validate(edit_args)
    except NonRetryableError as bad:
        raise InputError(
            f"the edited arguments do not fit: {bad}; nothing was approved, and task {task_id} "
            f"still waits for approval of operation {approval.seq}"
        ) from None
    return approval.seq, None


def _tool_of(
    task: Task, name: str, store: StateStore, load: Callable[[str], Workflow]
) -> tuple[Tool | None, str]:
    """The tool `name` of the task's workflow, loaded here; else None and why not.

    Loading it runs code, so only a task whose code references hold their
    seal is loaded: a row a database writer forged waits for its run, which
    refuses it, and the person's decision is never a way to run its code.
    """
    if not task.workflow:
        return None, f"task {task.id} names no workflow"
    try:
        key = SigningKey.from_environment()
        covered = key.check(task)
        workflow = load(task.workflow)
        sealed_inputs(workflow.code_inputs, covered, task.workflow)
        tools = {**workflow.tools, **{t.name: t for t in workflow.tools_for(task, store)}}
    except StoreError:
        raise
    except Exception as error:  # its code may well not be here (another machine): it is checked then
        return None, f"{task.workflow} does not load here ({type(error).__name__}: {error})"
    found = tools.get(name)
    if found is None:
        return None, f"{task.workflow} has no tool {name!r} here"
    return found, ""


async def settle_approval(
    store: StateStore,
    task_id: str,
    *,
    approve: bool,
    edit_args: dict[str, JsonValue] | None = None,
    reason: str | None = None,
    seq: int | None = None,
    load: Callable[[str], Workflow] = load_workflow,
) -> Approval:
    """A person's decision on the call a task waits for; the task is queued to go on.

    Edited arguments are checked first (`check_edited_arguments`), with the
    workflow `load` finds. With `seq`, the decision is on that call only: a
    person who looked at it is never taken to have decided a later one.

    Raises:
        AlreadyDecided: the call the task waited for was decided, and the
            task has not run it yet (`decided_not_run`): the message says how
            and when, and what runs it.
        InputError: the task does not wait for an approval (of operation
            `seq`, if given), or the edited arguments do not fit the tool's.
    """
    checked_seq, unchecked = None, None
    if approve and edit_args is not None:
        checked_seq, unchecked = await _check_edits(store, task_id, edit_args, load)
    async with store.transaction() as tx:
        # Triggers first, as a worker claiming the approval timeout locks them first: the two
        # wait for each other instead of deadlocking (a decision made meanwhile is then seen).
        await tx.delete_triggers(task_id)
        task = await tx.get_task(task_id)
        pending = await tx.list_approvals(task_id, pending_only=True)
        if task.waiting_on is not WaitReason.APPROVAL or not pending:
            decided = await decided_not_run(tx, task)
            if decided is not None:
                raise AlreadyDecided(_already_decided(task, decided))
            raise InputError(f"task {task_id} is {task.status_text}, not waiting for an approval")
        approval = pending[0]  # the oldest first; parallel calls can wait together
        if seq is not None and approval.seq != seq:
            raise InputError(
                f"task {task_id} waits for approval of operation {approval.seq}, not {seq}; "
                f"nothing was decided: look at it again with `ratchet show {task_id}`"
            )
        if approve and edit_args is not None and approval.seq != checked_seq:
            raise InputError(  # someone decided the call they were checked for meanwhile
                f"task {task_id} now waits for approval of operation {approval.seq}, not "
                f"{checked_seq}; nothing was approved: look at it with `ratchet show {task_id}`"
            )
        if approve:
            edited = ""
            if edit_args is not None:
                edited = f" with the arguments {json.dumps(edit_args, ensure_ascii=False)}"
            if unchecked is not None:
                edited += f" (checked when the call runs: {unchecked})"
            message = f"a person approved {approval.tool} (operation {approval.seq}){edited}"
        else:
            message = f"a person denied {approval.tool} (operation {approval.seq}): {reason}"
        return await _decide(
            tx,
            task,
            approval,
            approve=approve,
            edit_args=edit_args,
            reason=reason,
            event=Event(
                task_id=task_id,
                kind="approved" if approve else "denied",
                message=message,
                display_message=message,
                data={"seq": approval.seq, "tool": approval.tool},
            ),
        )


async def decided_not_run(tx: StoreOps, task: Task) -> Approval | None:
    """The call a person decided on that the task has not run (or failed as denied) yet, or None.

    Calls wait, are decided and run in the order of their seq, and the journal
    records nothing of a call before its approval lets it through: the newest
    decision waits for a run while the journal holds nothing at its seq.
    """
    if task.status.is_terminal:
        return None
    decided = [a for a in await tx.list_approvals(task.id) if a.status is not ApprovalStatus.PENDING]
    if not decided:
        return None
    newest = max(decided, key=lambda approval: approval.seq)
    return newest if await tx.get_op(task.id, newest.seq) is None else None


def _already_decided(task: Task, decided: Approval) -> str:
    """Why a second decision on `decided` is refused, and what the task does next, in one line."""
    what = f"{decided.status} already"
    if decided.decided_at is not None:
        what += f", at {decided.decided_at.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"
    if decided.status is ApprovalStatus.APPROVED:
        then = "the call runs"
    else:
        what += f" ({decided.reason})"
        then = "the call fails as denied, and the task goes on,"
    if task.status is TaskStatus.RUNNING:
        then += " in the run going on now"
    else:
        then += f" when a running `ratchet worker` picks the task up, or with `ratchet resume {task.id}`"
    return (
        f"{decided.tool} (operation {decided.seq}) of task {task.id} was {what}; nothing was changed: {then}"
    )


async def expire_approval(tx: StoreOps, trigger: Trigger) -> Approval | None:
    """Deny the approval an ``approval_timeout`` trigger names, if it is still pending.

    Runs in `tx`, the transaction that claimed the trigger. Returns the
    denied approval, or None when a person decided first.
    """
    seq = trigger.payload.get("seq")
    if trigger.task_id is None or not isinstance(seq, int):
        return None
    try:
        task = await tx.get_task(trigger.task_id)
    except TaskNotFound:
        return None
    approval = await tx.get_approval(trigger.task_id, seq)
    if (
        task.waiting_on is not WaitReason.APPROVAL
        or approval is None
        or approval.status is not ApprovalStatus.PENDING
    ):
        return None
    reason = f"approval timed out after {task.approval_timeout or 0:g} s"
    return await _decide(
        tx,
        task,
        approval,
        approve=False,
        reason=reason,
        event=Event(
            task_id=task.id,
            kind="approval_timed_out",
            severity=Severity.WARNING,
            message=f"{approval.tool} (operation {seq}) was denied: {reason}",
            display_message=f"approval timed out: {approval.tool} denied",
            data={"seq": seq, "tool": approval.tool},
        ),
    )


async def _decide(
    tx: StoreOps,
    task: Task,
    approval: Approval,
    *,
    approve: bool,
    event: Event,
    edit_args: dict[str, JsonValue] | None = None,
    reason: str | None = None,
) -> Approval:
    decided = await tx.decide_approval(
        approval.model_copy(
            update={
                "status": ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED,
                "edited_arguments": edit_args if approve else None,
                "reason": reason,
                "decided_at": utcnow(),
            }
        )
    )
    await _wake(tx, task, f"{task.id}:approval:{approval.seq}", event)
    return decided


async def _wake(tx: StoreOps, task: Task, dedupe_key: str, event: Event) -> None:
    """Queue a task a person let go on, as `Runtime.resolve` does: waiting(timer) and a wake trigger."""
    await tx.update_task(task.transition(TaskStatus.WAITING, waiting_on=WaitReason.TIMER))
    await tx.delete_triggers(task.id)  # an approval timeout no longer applies
    await tx.put_trigger(Trigger(kind="wake", task_id=task.id, dedupe_key=dedupe_key))
    await tx.append_event(event)


# --------------------------------------------------------------------------- questions


async def pending_question(tx: StoreOps, task_id: str) -> Operation | None:
    """The task's question that has no answer yet, or None."""
    asked = [
        op
        for op in await tx.list_ops(task_id)
        if op.kind is OpKind.QUESTION and op.status is OpStatus.STARTED
    ]
    return asked[-1] if asked else None


def question_text(op: Operation) -> str:
    return str(op.input.get("question", "")) if isinstance(op.input, dict) else ""


async def answer_question(store: StateStore, task_id: str, text: str) -> Operation:
    """Record a person's answer to the task's question, durably; the task is queued to go on.

    Raises:
        InputError: the task does not wait for an answer.
    """
    async with store.transaction() as tx:
        task = await tx.get_task(task_id)
        asked = await pending_question(tx, task_id)
        if task.waiting_on is not WaitReason.INPUT or asked is None:
            raise InputError(f"task {task_id} is {task.status_text}, not waiting for an answer")
        refused = asked.meta.get("unanswerable")  # why an answer could not go on (a LangGraph thread's)
        if isinstance(refused, str):
            raise InputError(f"task {task_id}: {refused}; nothing was answered")
        answered = asked.model_copy(
            update={
                "status": OpStatus.SUCCEEDED,
                "output": text,
                "finished_at": utcnow(),
                "meta": {**asked.meta, "answered_by": "a person"},
            }
        )
        await tx.record_op_finished(answered)
        message = f"a person answered {question_text(asked)!r}: {text}"
        await _wake(
            tx,
            task,
            f"{task_id}:answer:{asked.seq}",
            Event(
                task_id=task_id,
                kind="answered",
                message=message,
                display_message=message,
                data={"seq": asked.seq},
            ),
        )
    return answered


def describe_wait(task: Task, approvals: list[Approval], question: Operation | None) -> str:
    """What a task waiting on a person waits for, and the command that settles it."""
    if task.waiting_on is WaitReason.APPROVAL and approvals:
        a = approvals[0]
        return (
            f"an approval of {a.tool} {json.dumps(a.arguments, ensure_ascii=False)} (operation {a.seq}): "
            f"`ratchet approve {task.id}` or `ratchet deny {task.id} --reason TEXT`"
        )
    if task.waiting_on is WaitReason.INPUT and question is not None:
        return f"an answer to {question_text(question)!r}: `ratchet answer {task.id} TEXT`"
    if task.waiting_on is WaitReason.IN_DOUBT:
        return "a person to settle an in-doubt operation (`ratchet resolve`)"
    return "a person"


def in_doubt_settlement(op: Operation, *, retry: bool, skip: bool, result: Any) -> tuple[Operation, str]:
    """An in-doubt call as a person settled it (run again, skipped, or given `result`), and how to say so."""
    now = utcnow()
    if retry:
        return op.model_copy(
            update={
                "status": OpStatus.FAILED,
                "error": "in doubt; a person chose to run it again",
                "error_type": "InDoubt",
                "next_attempt_at": now,
                "finished_at": now,
            }
        ), "run it again"
    output = None if skip else result
    return op.model_copy(
        update={
            "status": OpStatus.SUCCEEDED,
            "output": output,
            "finished_at": now,
            "meta": {**op.meta, "resolved": "skip" if skip else "result"},
        }
    ), "skipped" if skip else "given a result"


async def resolve_in_doubt(
    store: StateStore, task_id: str, seq: int, *, retry: bool, skip: bool, result: Any
) -> Task:
    """Settle the in-doubt operation `seq` as `in_doubt_settlement` says; the task is queued to go on.

    Raises:
        InputError: the task does not wait on that operation.
    """
    async with store.transaction() as tx:
        task = await tx.get_task(task_id)
        if task.waiting_on is not WaitReason.IN_DOUBT:
            raise InputError(f"task {task_id} is {task.status_text}, not waiting on an in-doubt operation")
        op = await tx.get_op(task_id, seq)
        if op is None or op.status is not OpStatus.STARTED:
            raise InputError(
                f"operation {seq} of task {task_id} is not in doubt"
                + ("" if op is None else f" (it is {op.status})")
            )
        settled, how = in_doubt_settlement(op, retry=retry, skip=skip, result=result)
        queued = task.transition(TaskStatus.WAITING, waiting_on=WaitReason.TIMER)
        await tx.record_op_finished(settled)
        await tx.update_task(queued)
        await tx.put_trigger(Trigger(kind="wake", task_id=task_id, dedupe_key=f"{task_id}:resolved:{seq}"))
        await tx.append_event(
            Event(
                task_id=task_id,
                kind="resolved",
                message=f"operation {seq} ({op.name}) resolved: {how}",
                data={"seq": seq, "how": how},
            )
        )
    return queued

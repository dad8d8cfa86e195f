"""What a person settles: approvals, answers, in-doubt calls; and messages and notes sent to a task.

Each decision is written durably and queues the task for a worker, exactly
as `ratchet approve`, `deny`, `answer`, `resolve`, `send` and `note` do; the
answer is the task as the decision left it (`task_json`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..errors import CorruptRecord, InputError
from ..json_text import read_json_text
from ..records import Approval, TaskStatus, WaitReason
from ..views.record_json import (
    approval_json,
    inbox_message_json,
    iso_time,
    operation_json,
    task_json,
    unreadable_json,
)
from ..views.task import in_doubt_ops
from .deps import ID_PATTERN, MAX_ID_CHARS, RuntimeDep, TaskId

__all__ = ["router"]

router = APIRouter(tags=["people"])

Seq = Annotated[int, Path(ge=0, le=2**62, description="The operation's seq in the task's journal.")]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApproveBody(_Body):
    edit_args: dict[str, JsonValue] | None = Field(
        default=None, description="Run the call with these arguments instead of the model's."
    )
    edit_args_json: str | None = Field(
        default=None,
        description="The same as JSON text, read by the server (every integer exact, as typed); "
        "instead of `edit_args`. Send neither to run the arguments the approval shows.",
    )
    seq: int | None = Field(
        default=None, ge=0, le=2**62, description="Approve only if the call waiting is this operation."
    )


class DenyBody(_Body):
    reason: str = Field(min_length=1, max_length=10_000, description="Why; the agent is told.")
    seq: int | None = Field(
        default=None, ge=0, le=2**62, description="Deny only if the call waiting is this operation."
    )


class AnswerBody(_Body):
    text: str = Field(min_length=1, description="The answer to the task's question.")


class MessageBody(_Body):
    name: str = Field(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)
    payload: JsonValue = None


class NoteBody(_Body):
    text: str = Field(min_length=1, description="A note the agent reads at its next turn.")


class ResolveBody(_Body):
    action: Literal["retry", "skip", "result"] = Field(
        description="retry: it did not happen, run it again; skip: it happened, no result; "
        "result: it happened, with `result`."
    )
    result: JsonValue = None
    result_json: str | None = Field(
        default=None,
        description="With `result`: the result as JSON text, read by the server (every integer exact); "
        "instead of `result`.",
    )


@router.get("/approvals", summary="Every tool call waiting for a person's approval")
async def pending_approvals(rt: RuntimeDep) -> list[dict[str, Any]]:
    """The pending approvals of every task waiting on one, oldest request first.

    Each has its ``arguments`` also as ``arguments_json``: the JSON text of the
    values the call runs with, every integer in full (show that text to a person).
    An approval row that cannot be read comes after them, as its key and
    what is wrong with it (``unreadable``): one damaged row hides no other.
    """
    found: list[Approval] = []
    unreadable: list[CorruptRecord] = []
    async with rt.store.reading() as tx:
        for task in await tx.list_tasks(TaskStatus.WAITING):
            if task.waiting_on is WaitReason.APPROVAL:
                found += await tx.list_approvals(task.id, pending_only=True, unreadable=unreadable)
    return _listing(sorted(found, key=lambda a: a.requested_at), unreadable)


@router.get("/tasks/{task_id}/approvals", summary="A task's approvals, decided or not")
async def task_approvals(rt: RuntimeDep, task_id: TaskId, pending: bool = False) -> list[dict[str, Any]]:
    """The task's approvals, oldest first, each with ``arguments_json`` and ``edited_arguments_json``
    (its arguments as exact JSON text); a row that cannot be read comes last, as ``unreadable``."""
    unreadable: list[CorruptRecord] = []
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        found = await tx.list_approvals(task_id, pending_only=pending, unreadable=unreadable)
    return _listing(found, unreadable)


def _listing(approvals: list[Approval], unreadable: list[CorruptRecord]) -> list[dict[str, Any]]:
    return [*(approval_json(a) for a in approvals), *(unreadable_json(row) for row in unreadable)]


@router.post("/tasks/{task_id}/approve", summary="Approve the call a task waits for")
async def approve(rt: RuntimeDep, task_id: TaskId, body: ApproveBody | None = None) -> dict[str, Any]:
    """It then runs (with ``edit_args`` or ``edit_args_json`` instead of the model's arguments, if given).

    400 if none waits (or another than ``seq``), or if the edited arguments are not a JSON
    object that fits the tool's; 409 if the call was decided already and the task has not
    run it yet (a second approval of it): the answer says how and when, and nothing changes.
    """
    body = body or ApproveBody()
    edited = body.edit_args
    if body.edit_args_json is not None:
        if edited is not None:
            raise InputError("give the edited arguments once: edit_args or edit_args_json, not both")
        typed = read_json_text(body.edit_args_json, "the edited arguments")
        if not isinstance(typed, dict):
            raise InputError('the edited arguments must be a JSON object, e.g. {"to": "ops@example.com"}')
        edited = typed
    return task_json(await rt.approve(task_id, edit_args=edited, seq=body.seq))


@router.post("/tasks/{task_id}/deny", summary="Deny the call a task waits for")
async def deny(rt: RuntimeDep, task_id: TaskId, body: DenyBody) -> dict[str, Any]:
    """The call fails as denied and the agent is told the reason (409 as for approve)."""
    return task_json(await rt.deny(task_id, body.reason, seq=body.seq))


@router.post("/tasks/{task_id}/answer", summary="Answer the question a task waits on")
async def answer(rt: RuntimeDep, task_id: TaskId, body: AnswerBody) -> dict[str, Any]:
    return task_json(await rt.answer(task_id, body.text))


@router.get("/tasks/{task_id}/in-doubt", summary="The calls a person must settle before the task goes on")
async def in_doubt(rt: RuntimeDep, task_id: TaskId) -> list[dict[str, Any]]:
    async with rt.store.reading() as tx:
        return [operation_json(op) for op in await in_doubt_ops(tx, await tx.get_task(task_id))]


@router.post(
    "/tasks/{task_id}/in-doubt/{seq}", summary="Settle an in-doubt call: retry, skip or set its result"
)
async def resolve(rt: RuntimeDep, task_id: TaskId, seq: Seq, body: ResolveBody) -> dict[str, Any]:
    given = body.model_fields_set & {"result", "result_json"}
    if body.action != "result" and given:
        raise InputError(f"a result goes with the action 'result', not {body.action!r}")
    if len(given) > 1:
        raise InputError("give the result once: result or result_json, not both")
    if body.action == "result":
        result = body.result if body.result_json is None else read_json_text(body.result_json, "the result")
        task = await rt.resolve(task_id, seq, result=result)
    else:
        task = await rt.resolve(task_id, seq, retry=body.action == "retry", skip=body.action == "skip")
    return task_json(task)


@router.get("/tasks/{task_id}/messages", summary="The messages sent to a task, in the order sent")
async def messages(rt: RuntimeDep, task_id: TaskId, pending: bool = False) -> list[dict[str, Any]]:
    """Each as ``pending_messages`` of `GET /api/tasks/{task_id}` shows it, with when it was taken."""
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        inbox = await tx.list_inbox(task_id, pending_only=pending)
    return [{**inbox_message_json(m), "taken_at": iso_time(m.taken_at)} for m in inbox]


@router.post("/tasks/{task_id}/messages", status_code=201, summary="Send a message to a task")
async def send(rt: RuntimeDep, task_id: TaskId, body: MessageBody) -> dict[str, Any]:
    """Its workflow gets it from ``ctx.receive(name)``, exactly once (`ratchet send`)."""
    return inbox_message_json(await rt.send(task_id, body.name, body.payload))


@router.post("/tasks/{task_id}/notes", status_code=201, summary="Leave a note for a task's agent")
async def note(rt: RuntimeDep, task_id: TaskId, body: NoteBody) -> dict[str, Any]:
    """The agent reads it at its next turn (`Runtime.note`)."""
    return inbox_message_json(await rt.note(task_id, body.text))

"""Writes to a task from outside its run: a state patch, a handoff to another agent, a grant.

Each is one transaction, evented, and checks in it that the agent making it
may (trust/scope.py). How a running task keeps what these write is queued_patches.py's part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import JsonValue, ValidationError

from ..errors import InputError, StatePatchError
from ..records import Event, InboxMessage, StatePatch, Task, TaskGrant, utcnow
from ..trust.scope import check_may_write
from .inbox import deliver
from .queued_patches import STATE_PATCH

if TYPE_CHECKING:
    from ..store import StateStore, StoreOps

__all__ = ["ended_refusal", "grant_task", "hand_off", "patch_from_outside"]


def ended_refusal(task: Task, what: str) -> str:
    """The line refusing `what` (e.g. "patch its state") on a task that ended."""
    return (
        f"task {task.id} is already {task.status}: its record is final and nobody may {what}; "
        f"`ratchet fork` or `ratchet retry` continues from it in a new task"
    )


async def patch_from_outside(
    store: StateStore, task_id: str, patch: StatePatch | dict[str, Any], *, by: str | None = None
) -> Task:
    """Apply `patch` to the task's state now, and queue it for its run; one transaction, evented.

    Args:
        by: the agent that sends it, and may write the task (trust/scope.py),
            checked in the same transaction; None: a person, who may.

    Returns:
        The task as stored, its state patched.

    Raises:
        InputError: the patch is not a StatePatch, does not apply to the
            task's state, or the task already ended; nothing is written.
        WriteRefused: `by` may not write the task.
        TaskNotFound: no task has that id.
    """
    try:
        checked = StatePatch.model_validate(patch)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "patch"
        raise InputError(f"invalid state patch: {where}: {first['msg']}") from None
    async with store.transaction() as tx:
        await tx.hold_run(task_id)  # before any other lock: see StoreOps.hold_run
        task = await tx.get_task_locked(task_id)
        await _check_scope(tx, task_id, by, "patch it")
        if task.status.is_terminal:
            raise InputError(ended_refusal(task, "patch its state"))
        try:
            state = checked.apply(task.state)
        except StatePatchError as error:
            raise InputError(f"the patch does not apply to task {task_id}'s state: {error}") from None
        payload: dict[str, JsonValue] = {"patch": checked.model_dump(mode="json"), "by": by}
        sent = await tx.send_message(InboxMessage(task_id=task_id, name=STATE_PATCH, payload=payload))
        patched = task.model_copy(update={"state": state, "updated_at": utcnow()})
        await tx.update_task(patched)
        ops = ", ".join(op.op for op in checked.ops)
        await tx.append_event(
            Event(
                task_id=task_id,
                kind="state_patched",
                message=f"state changed from outside by {_who(by)}: {ops}",
                data={"by": by, "patch": payload["patch"], "message": sent.seq},
            )
        )
    return patched


async def hand_off(
    store: StateStore, task_id: str, to_agent: str, *, note: str = "", note_name: str, by: str | None = None
) -> Task:
    """Give the task to agent `to_agent`: it owns it from now on; evented, with the note.

    The note, if any, is sent to the task as a message named `note_name`
    in the same transaction (an agent reads it at its next act turn).

    Args:
        by: the agent that gives it (its owner; trust/scope.py), checked in the
            same transaction; None: a person, who may.

    Raises:
        InputError: no agent id, the task already belongs to it, or it ended.
        WriteRefused: `by` does not own the task.
        TaskNotFound: no task has that id.
    """
    to_agent = _agent_id(to_agent)
    async with store.transaction() as tx:
        await tx.hold_run(task_id)  # before any other lock: see StoreOps.hold_run
        task = await tx.get_task_locked(task_id)
        await _check_scope(tx, task_id, by, "hand it off")
        if task.status.is_terminal:
            raise InputError(ended_refusal(task, "hand it off"))
        if task.agent == to_agent:
            raise InputError(f"task {task_id} already belongs to agent {to_agent}")
        given = task.model_copy(update={"agent": to_agent, "updated_at": utcnow()})
        await tx.update_task(given)
        text = f"handed off from agent {task.agent} to agent {to_agent}" + (f": {note}" if note else "")
        await tx.append_event(
            Event(
                task_id=task_id,
                kind="handed_off",
                message=text,
                display_message=f"Handed off to {to_agent}",
                data={"from": task.agent, "to": to_agent, "note": note or None, "by": by},
            )
        )
        if note.strip():
            told = f"This task was handed off to you (agent {to_agent}) by agent {task.agent}: {note}"
            await deliver(tx, task_id, note_name, told)
    return given


async def grant_task(store: StateStore, task_id: str, agent: str, *, by: str | None = None) -> bool:
    """Let `agent` write the task without giving it away; True if new, False if it had leave already.

    Args:
        by: the agent that grants it (its owner; trust/scope.py), checked in the
            same transaction; None: a person, who may.

    Raises:
        InputError: no agent id, the agent owns the task, or the task ended.
        WriteRefused: `by` does not own the task.
        TaskNotFound: no task has that id.
    """
    agent = _agent_id(agent)
    async with store.transaction() as tx:
        await tx.hold_run(task_id)  # before any other lock: see StoreOps.hold_run
        task = await tx.get_task_locked(task_id)
        await _check_scope(tx, task_id, by, "grant it")
        if task.status.is_terminal:
            raise InputError(ended_refusal(task, "grant it"))
        if task.agent == agent:
            raise InputError(f"task {task_id} belongs to agent {agent} already; a grant is for another agent")
        granted = await tx.grant_task(TaskGrant(task_id=task_id, agent=agent, granted_by=by))
        if granted:
            await tx.append_event(
                Event(
                    task_id=task_id,
                    kind="granted",
                    message=f"agent {agent} may write this task (granted by {_who(by)})",
                    data={"agent": agent, "by": by},
                )
            )
    return granted


def _agent_id(agent: str) -> str:
    if not isinstance(agent, str) or not agent.strip() or agent != agent.strip() or len(agent) > 200:
        raise InputError(
            f"{agent!r} is not an agent id: give a name such as 'reviewer' (no surrounding spaces)"
        )
    return agent


async def _check_scope(tx: StoreOps, task_id: str, by: str | None, action: str) -> None:
    if by is not None:
        await check_may_write(tx, task_id, by, action)


def _who(agent: str | None) -> str:
    return f"agent {agent}" if agent else "a person"

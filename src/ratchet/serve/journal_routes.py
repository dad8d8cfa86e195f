"""A task's record of what happened: its journal (operations), steps, checkpoints and events.

Each route reads the task first, so an unknown task is a 404 rather than an
empty list. The journal's entries are those of `ratchet journal --json`
(ratchet.views.journal): `operation_json` records with their duration, a short
preview of their input and output (the whole values with ``?full=true``, or
one call's at ``/journal/{seq}``) and what the store tells of their runs and
attempts.

The journal and the events come a page at a time, by seq: ``after_seq`` is
where a page starts, ``next_after_seq`` what to pass for the next page (null
on the last), ``total`` how many the task holds in all. A seq never changes
and new ones only come after the old, so paging on is stable while the task
runs: no call is given twice or skipped (docs/serve.md, "Paging").
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi import Path as PathParam

from ..errors import CorruptRecord
from ..records import Event
from ..views.journal import journal_entry_json, load_journal
from ..views.record_json import checkpoint_json, event_json, step_json, unreadable_json
from ..views.state_diff import state_diff_json
from ..views.task import in_seq_order
from .deps import RuntimeDep, TaskId

__all__ = ["MAX_PAGE", "router"]

router = APIRouter(tags=["journal"])

MAX_PAGE = 1000
_SEQ_MAX = 2**62
CheckpointNumber = Annotated[int, PathParam(ge=1, le=2**31, description="The checkpoint's number (from 1).")]


def _seq_of(item: Event | CorruptRecord) -> int:
    seq = item.seq if isinstance(item, Event) else item.key[-1]
    return seq if isinstance(seq, int) else -1  # an unreadable row's seq column may hold anything


def next_after(seqs: list[int], limit: int) -> int | None:
    """What ``after_seq`` the next page starts after: the page's last seq when more were read (limit + 1)."""
    return seqs[limit - 1] if len(seqs) > limit else None


@router.get("/tasks/{task_id}/journal", summary="A task's journaled calls, in seq order, a page at a time")
async def journal(
    rt: RuntimeDep,
    task_id: TaskId,
    after_seq: Annotated[int, Query(ge=-1, le=_SEQ_MAX, description="Only calls after this seq.")] = -1,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 200,
    full: Annotated[bool, Query(description="Include each call's whole input and output.")] = False,
) -> dict[str, Any]:
    """``{"calls": [...], "total": N, "next_after_seq": SEQ or null}``.

    Each call: kind, name, step, attempt, status, duration, idempotency key,
    input and output previews, the run that recorded it, whether it was
    replayed, is in doubt or was retried (with its earlier attempts): what
    `ratchet journal --json` prints (see ratchet.views.journal for each mark).
    """
    async with rt.store.reading() as tx:
        found = await load_journal(tx, task_id, after_seq=after_seq, limit=limit + 1)
        total = await tx.count_ops(task_id)
    return {
        "calls": [journal_entry_json(entry, full=full) for entry in found.entries[:limit]],
        "total": total,
        "next_after_seq": next_after([entry.op.seq for entry in found.entries], limit),
    }


@router.get("/tasks/{task_id}/journal/{seq}", summary="One journaled call, its whole input and output")
async def journal_call(
    rt: RuntimeDep,
    task_id: TaskId,
    seq: Annotated[int, PathParam(ge=0, le=_SEQ_MAX, description="The call's seq.")],
) -> dict[str, Any]:
    """The call as ``/journal?full=true`` gives it: its whole ``input`` and ``output`` (404: no such call)."""
    async with rt.store.reading() as tx:
        found = await load_journal(tx, task_id, after_seq=seq - 1, limit=1)
    if not found.entries or found.entries[0].op.seq != seq:
        raise HTTPException(status_code=404, detail=f"task {task_id} has no call {seq}")
    return journal_entry_json(found.entries[0], full=True)


@router.get("/tasks/{task_id}/steps", summary="A task's plan: its steps, numbered from 1")
async def steps(rt: RuntimeDep, task_id: TaskId) -> list[dict[str, Any]]:
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        return [step_json(step) for step in await tx.list_steps(task_id)]


@router.get("/tasks/{task_id}/checkpoints", summary="A task's checkpoints, oldest first")
async def checkpoints(rt: RuntimeDep, task_id: TaskId) -> list[dict[str, Any]]:
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        return [checkpoint_json(saved) for saved in await tx.list_checkpoints(task_id)]


@router.get("/tasks/{task_id}/checkpoints/{number}", summary="One checkpoint, with its agent state and steps")
async def checkpoint(rt: RuntimeDep, task_id: TaskId, number: CheckpointNumber) -> dict[str, Any]:
    """As ``/checkpoints`` lists it, with the ``state`` (agent state) and ``steps`` it saved."""
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        saved = await tx.get_checkpoint(task_id, number)
    return {
        **checkpoint_json(saved),
        "state": saved.state.model_dump(mode="json"),
        "steps": [step_json(step) for step in saved.steps],
    }


@router.get("/tasks/{task_id}/state-diff", summary="What changed in the agent state between two checkpoints")
async def state_diff(
    rt: RuntimeDep,
    task_id: TaskId,
    start: Annotated[int, Query(alias="from", ge=1, le=2**31, description="The earlier checkpoint.")],
    end: Annotated[
        int | None, Query(alias="to", ge=1, le=2**31, description="The later checkpoint (default: now).")
    ] = None,
) -> dict[str, Any]:
    """Each list of the agent state with what it gained (``added``) and lost (``removed``) from ``from``
    to ``to``; facts whose value changed under the same key (``changed``); the goal if it changed."""
    async with rt.store.reading() as tx:
        task = await tx.get_task(task_id)
        before = await tx.get_checkpoint(task_id, start)
        after = task.state if end is None else (await tx.get_checkpoint(task_id, end)).state
    return {"task_id": task_id, "from": start, "to": end, **state_diff_json(before.state, after)}


@router.get("/tasks/{task_id}/events", summary="A task's events, oldest first, a page at a time")
async def events(
    rt: RuntimeDep,
    task_id: TaskId,
    after_seq: Annotated[int, Query(ge=0, le=_SEQ_MAX, description="Only events after this seq.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 500,
) -> dict[str, Any]:
    """``{"events": [...], "total": N, "next_after_seq": SEQ or null}``: what `ratchet events --json`
    prints, one record each (an unreadable row as ``unreadable``, in its place)."""
    unreadable: list[CorruptRecord] = []
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        found = await tx.list_events(task_id, after_seq=after_seq, limit=limit + 1, unreadable=unreadable)
        total = await tx.count_events(task_id)
    ordered = in_seq_order(found, unreadable)
    seqs = [_seq_of(item) for item in ordered]
    return {
        "events": [
            event_json(item) if isinstance(item, Event) else unreadable_json(item) for item in ordered[:limit]
        ],
        "total": total,
        "next_after_seq": next_after(seqs, limit),
    }

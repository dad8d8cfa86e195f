"""A task's record of what happened: its journal (operations), steps, checkpoints and events.

Each route reads the task first, so an unknown task is a 404 rather than an
empty list. The journal's entries are `operation_json` records (as in
`ratchet show --json`) with their duration and a short preview of their
input and output; the whole values come with ``?full=true``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..errors import CorruptRecord
from ..model import Checkpoint, Event, Operation
from ..record_json import event_json, iso_time, operation_json, step_json, unreadable_json
from ..task_view import in_seq_order
from .deps import RuntimeDep, TaskId

__all__ = ["PREVIEW_CHARS", "router"]

router = APIRouter(tags=["journal"])

PREVIEW_CHARS = 200
MAX_PAGE = 1000


def preview(value: Any) -> str | None:
    """`value` as JSON text, cut to `PREVIEW_CHARS` characters (None stays None)."""
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def journal_entry(op: Operation, *, full: bool) -> dict[str, Any]:
    """One journaled call: its `operation_json` record, duration and previews."""
    entry = operation_json(op)
    finished = op.finished_at
    entry["duration_seconds"] = None if finished is None else (finished - op.started_at).total_seconds()
    entry["input_preview"] = preview(op.input)
    entry["output_preview"] = preview(op.output)
    if not full:
        del entry["input"], entry["output"]
    return entry


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """A checkpoint by its number (what `ratchet fork --checkpoint` takes), without its snapshot."""
    return {
        "task_id": checkpoint.task_id,
        "checkpoint": checkpoint.number,
        "created_at": iso_time(checkpoint.created_at),
        "last_seq": checkpoint.last_seq,
        "message_cursor": checkpoint.message_cursor,
        "status": str(checkpoint.task.status),
        "steps_completed": sum(1 for step in checkpoint.steps if str(step.status) == "completed"),
    }


@router.get("/tasks/{task_id}/journal", summary="A task's journaled calls, in seq order")
async def journal(
    rt: RuntimeDep,
    task_id: TaskId,
    after_seq: Annotated[int, Query(ge=-1, le=2**62, description="Only calls after this seq.")] = -1,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 200,
    full: Annotated[bool, Query(description="Include each call's whole input and output.")] = False,
) -> list[dict[str, Any]]:
    """Kind, name, attempt, status, duration, idempotency key, input and output previews of each call."""
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        ops = await tx.list_ops(task_id, after_seq=after_seq)
    return [journal_entry(op, full=full) for op in ops[:limit]]


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


@router.get("/tasks/{task_id}/events", summary="A task's events, oldest first, a page at a time")
async def events(
    rt: RuntimeDep,
    task_id: TaskId,
    after_seq: Annotated[int, Query(ge=0, le=2**62, description="Only events after this seq.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 500,
) -> list[dict[str, Any]]:
    """What `ratchet events --json` prints, one record each (an unreadable row as ``unreadable``)."""
    unreadable: list[CorruptRecord] = []
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        found = await tx.list_events(task_id, after_seq=after_seq, limit=limit, unreadable=unreadable)
    return [
        event_json(item) if isinstance(item, Event) else unreadable_json(item)
        for item in in_seq_order(found, unreadable)
    ]

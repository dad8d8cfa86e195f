"""A task's record of what happened: its journal (operations), steps, checkpoints and events.

Each route reads the task first, so an unknown task is a 404 rather than an
empty list. The journal's entries are those of `ratchet journal --json`
(ratchet.views.journal): `operation_json` records with their duration, a short
preview of their input and output (the whole values with ``?full=true``) and
what the store tells of their runs and attempts.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..errors import CorruptRecord
from ..records import Event
from ..views.journal import journal_entry_json, load_journal
from ..views.record_json import checkpoint_json, event_json, step_json, unreadable_json
from ..views.task import in_seq_order
from .deps import RuntimeDep, TaskId

__all__ = ["router"]

router = APIRouter(tags=["journal"])

MAX_PAGE = 1000


@router.get("/tasks/{task_id}/journal", summary="A task's journaled calls, in seq order")
async def journal(
    rt: RuntimeDep,
    task_id: TaskId,
    after_seq: Annotated[int, Query(ge=-1, le=2**62, description="Only calls after this seq.")] = -1,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 200,
    full: Annotated[bool, Query(description="Include each call's whole input and output.")] = False,
) -> list[dict[str, Any]]:
    """Kind, name, attempt, status, duration, idempotency key, input and output previews of each call,
    the run that recorded it, whether it was replayed, is in doubt or was retried (with its earlier attempts).

    What `ratchet journal --json` prints; see ratchet.views.journal for what each mark means.
    """
    async with rt.store.reading() as tx:
        found = await load_journal(tx, task_id, after_seq=after_seq)
    return [journal_entry_json(entry, full=full) for entry in found.entries[:limit]]


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

"""What the dashboard draws of a task: its budget as used and left, and the timeline of its calls.

Both are read models over records the API already serves: the budget is the
one the MCP task document gives (its children's spending included); the
timeline is the journal with each earlier attempt of a retried call put back
from the ``retry`` event that recorded it (the journal keeps only a call's
last attempt).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter

from ..errors import CorruptRecord
from ..event_feed import last_seq_of
from ..mcp.documents import task_document
from ..model import Event, Operation
from ..record_json import iso_time
from .deps import RuntimeDep, TaskId

__all__ = ["call_attempts", "router"]

router = APIRouter(tags=["journal"])

_EVENT_PAGE = 1000


@router.get("/tasks/{task_id}/budget", summary="A task's budget: limits, what it used, what is left")
async def budget(rt: RuntimeDep, task_id: TaskId) -> dict[str, Any]:
    """``limits``, ``used`` and ``left`` for ``steps``, ``llm_tokens``, ``cost`` and ``wall_time`` (seconds).

    A limit (and what is left of it) is null when the task has none; tokens
    and cost include what its child tasks spent. ``used.unpriced_calls``
    counts the model calls no price was known for (their cost is not in ``cost``).
    """
    document = await task_document(rt.store, task_id)
    shown: dict[str, Any] = document["budget"]
    return shown


def _time(text: Any) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _seconds(start: dt.datetime | None, end: dt.datetime | None) -> float | None:
    return None if start is None or end is None else max((end - start).total_seconds(), 0.0)


def call_attempts(ops: list[Operation], retries: list[Event]) -> list[dict[str, Any]]:
    """One record per attempt of each call, in seq then attempt order.

    An attempt that failed and was tried again comes from its ``retry`` event
    (its end the event's time; its start in the event's data, when the
    engine that wrote it recorded one); the call's last attempt comes from
    its journal row.
    """
    earlier: dict[int, list[Event]] = {}
    for event in retries:
        seq, attempt = event.data.get("seq"), event.data.get("attempt")
        if isinstance(seq, int) and isinstance(attempt, int):
            earlier.setdefault(seq, []).append(event)
    attempts = []
    for op in ops:
        for event in sorted(earlier.get(op.seq, []), key=lambda e: e.seq):
            attempt = event.data["attempt"]
            if not isinstance(attempt, int) or attempt >= op.attempt:
                continue  # the journal row tells this attempt itself, with its exact times
            started = _time(event.data.get("started_at"))
            attempts.append(
                {
                    "seq": op.seq,
                    "kind": str(op.kind),
                    "name": op.name,
                    "attempt": attempt,
                    "status": "failed",
                    "retried": True,
                    "started_at": iso_time(started),
                    "finished_at": iso_time(event.time),
                    "duration_seconds": _seconds(started, event.time),
                    "error": event.message,
                }
            )
        attempts.append(
            {
                "seq": op.seq,
                "kind": str(op.kind),
                "name": op.name,
                "attempt": op.attempt,
                "status": str(op.status),
                "retried": op.retry_pending,
                "started_at": iso_time(op.started_at),
                "finished_at": iso_time(op.finished_at),
                "duration_seconds": _seconds(op.started_at, op.finished_at),
                "error": op.error,
            }
        )
    return attempts


@router.get("/tasks/{task_id}/timeline", summary="Every attempt of every call of a task, with its times")
async def timeline(rt: RuntimeDep, task_id: TaskId) -> list[dict[str, Any]]:
    """Each attempt: seq, kind, name, attempt, status (``failed`` with ``retried`` when tried again),
    ``started_at``, ``finished_at`` (null while it runs), duration and error.

    An attempt retried before this version of Ratchet recorded its start has ``started_at`` null.
    """
    retries: list[Event] = []
    async with rt.store.reading() as tx:
        await tx.get_task(task_id)
        ops = await tx.list_ops(task_id)
        after = 0
        while True:
            unreadable: list[CorruptRecord] = []
            page = await tx.list_events(task_id, after_seq=after, limit=_EVENT_PAGE, unreadable=unreadable)
            retries.extend(event for event in page if event.kind == "retry")
            last = last_seq_of([*page, *unreadable])
            if len(page) + len(unreadable) < _EVENT_PAGE or last is None:
                break
            after = last
    return call_attempts(ops, retries)

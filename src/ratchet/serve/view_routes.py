"""What the dashboard draws of a task: its budget as used and left, and the timeline of its calls.

Both are read models over records the API already serves: the budget is the
one the MCP task document gives (its children's spending included); the
timeline is the journal with each earlier attempt of a retried call put back
from the ``retry`` event that recorded it (the journal keeps only a call's
last attempt).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..views.documents import task_document
from ..views.journal import call_attempts, load_journal
from .deps import RuntimeDep, TaskId

__all__ = ["router"]

router = APIRouter(tags=["journal"])


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


@router.get("/tasks/{task_id}/timeline", summary="Every attempt of every call of a task, with its times")
async def timeline(rt: RuntimeDep, task_id: TaskId) -> list[dict[str, Any]]:
    """Each attempt: seq, kind, name, attempt, status (``failed`` with ``retried`` when tried again),
    ``started_at``, ``finished_at`` (null while it runs), duration and error.

    An attempt retried before this version of Ratchet recorded its start has ``started_at`` null.
    """
    async with rt.store.reading() as tx:
        found = await load_journal(tx, task_id)
    return call_attempts(found.entries)

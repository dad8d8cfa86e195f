"""What the dashboard draws of a task: its budget, its calls' timeline, its family tree; tasks compared.

Each is a read model over records the API already serves: the budget is the
one the MCP task document gives (its children's spending included); the
timeline is the journal with each earlier attempt of a retried call put back
from the ``retry`` event that recorded it (the journal keeps only a call's
last attempt), paged by seq as the journal is; the tree is the task's
children, theirs and so on, each with its status and spending. A comparison
is `ratchet compare`'s record (views/compare.py), for the compare page.
What model calls cost by day, agent and model is `ratchet costs`' report
(views/costs.py).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..errors import InputError
from ..views.compare import MAX_COMPARED, comparison_json, load_comparison
from ..views.costs import COST_COLUMNS, cost_query, cost_report
from ..views.documents import task_document
from ..views.journal import call_attempts, load_journal
from ..views.model_usage import model_usage
from ..views.task_tree import load_task_tree
from .deps import ID_PATTERN, MAX_ID_CHARS, RuntimeDep, TaskId
from .journal_routes import next_after

__all__ = ["router"]

router = APIRouter(tags=["journal"])

MAX_TIMELINE_PAGE = 5000


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
async def timeline(
    rt: RuntimeDep,
    task_id: TaskId,
    after_seq: Annotated[int, Query(ge=-1, le=2**62, description="Only calls after this seq.")] = -1,
    limit: Annotated[int, Query(ge=1, le=MAX_TIMELINE_PAGE, description="At most this many calls.")] = 1000,
) -> dict[str, Any]:
    """``{"attempts": [...], "total": N, "next_after_seq": SEQ or null}``, paged by call as the journal is.

    Each attempt: seq, step (from 1; null outside any step), kind, name,
    attempt, status (``failed`` with ``retried`` when tried again),
    ``started_at``, ``finished_at`` (null while it runs), duration and error.
    ``total`` counts the task's calls. An attempt retried before this version
    of Ratchet recorded its start has ``started_at`` null.
    """
    async with rt.store.reading() as tx:
        found = await load_journal(tx, task_id, after_seq=after_seq, limit=limit + 1)
        total = await tx.count_ops(task_id)
    return {
        "attempts": call_attempts(found.entries[:limit]),
        "total": total,
        "next_after_seq": next_after([entry.op.seq for entry in found.entries], limit),
    }


@router.get("/tasks/{task_id}/tree", summary="A task's family: the tasks above it and every task below it")
async def tree(rt: RuntimeDep, task_id: TaskId) -> dict[str, Any]:
    """``ancestors`` (root first: task_id, name, status) and ``tree``: the task with its ``children``,
    theirs and so on, each with status, ``waiting_on``, ``llm_tokens``, ``cost`` and ``unpriced_calls``
    (its own model calls and those of the children it waited for). At most 2,000 tasks are read; a
    task whose children were left out has ``more_children`` true. ``tasks`` counts those given.
    """
    async with rt.store.reading() as tx:
        return await load_task_tree(tx, task_id)


@router.get("/tasks/{task_id}/models", summary="The models that answered a task's calls, and what each used")
async def models(rt: RuntimeDep, task_id: TaskId) -> dict[str, Any]:
    """``task_model`` (what the task names) and ``models``: per model that answered, its ``calls``,
    ``llm_tokens``, ``cost`` (US dollars, priced calls only) and ``unpriced_calls``; the most used first.
    """
    async with rt.store.reading() as tx:
        return await model_usage(tx, task_id)


@router.get("/compare", summary="Tasks side by side: outcomes, spending, steps, tool calls, where they part")
async def compare(
    rt: RuntimeDep,
    task: Annotated[
        list[str],
        Query(
            description=f"A task's id; give 2 to {MAX_COMPARED} (``?task=A&task=B``), each once.",
        ),
    ] = [],  # noqa: B006  # FastAPI copies a query's default; none given is refused by name, 400
) -> dict[str, Any]:
    """The tasks in the order given: ``tasks`` (status, result, tokens in and out, cost, models, wall
    time), ``steps`` and ``tool_calls`` (one entry a task in each row, null where it has none; a tool
    call row's ``mark`` is ``same``, ``differs`` or ``only in``, with ``only_in``), ``shared_prefix``
    and ``parted_at_seq`` (docs/cli.md, "Comparing tasks"). Fewer than 2 ids, more than 8, or one
    twice is 400; an unknown one 404.
    """
    for task_id in task:
        if not 0 < len(task_id) <= MAX_ID_CHARS or not re.fullmatch(ID_PATTERN, task_id):
            raise InputError(f"task id {task_id[:80]!r} is not one a task can have")
    async with rt.store.reading() as tx:
        return comparison_json(await load_comparison(tx, task))


@router.get("/costs", summary="What model calls cost, by UTC day, agent and model, with the total")
async def costs(
    rt: RuntimeDep,
    since: Annotated[
        str | None, Query(max_length=64, description="Only calls made at or after: ISO 8601, or 7d (ago).")
    ] = None,
    until: Annotated[
        str | None, Query(max_length=64, description="Only calls made before: ISO 8601, or 1d (ago).")
    ] = None,
    agent: Annotated[str | None, Query(max_length=200, description="Only this agent's calls.")] = None,
    model: Annotated[str | None, Query(max_length=400, description="Only the calls to this model.")] = None,
    by: Annotated[
        list[str],
        Query(description="A row per day, agent or model (``?by=agent&by=model``; default: all three)."),
    ] = [],  # noqa: B006  # FastAPI copies a query's default
) -> dict[str, Any]:
    """`ratchet costs --json`'s report: ``since`` and ``until`` (null: unbounded), ``by``, ``rows``
    (each the columns of ``by`` with ``calls``, ``unpriced_calls``, ``llm_tokens`` and ``cost``, US
    dollars of the priced calls) and ``total``. Each model call that succeeded counts on the UTC day
    it finished, under the model it asked for and its task's agent. A bad time or column is 400.
    """
    query = cost_query(
        since=since, until=until, agent=agent, model=model, by=by or COST_COLUMNS, spelled="{}"
    )
    async with rt.store.reading() as tx:
        return await cost_report(tx, query)

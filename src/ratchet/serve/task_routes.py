"""Tasks: list, show, submit, cancel, resume, retry and fork (the records of `ratchet tasks/show --json`)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..errors import CannotResume, CorruptRecord, InputError
from ..json_text import read_json_object
from ..limits import MAX_COUNT, PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN
from ..records import RiskLevel, TaskCursor, TaskStatus, Trigger, WaitReason
from ..runtime.agent_request import AgentRequest, submit_agent_task
from ..store.ops.task_rows import check_cursor
from ..views.record_json import task_json, task_view_json, unreadable_json
from ..views.task import load_task_view
from ..views.task_filter import MAX_SEARCH_CHARS, FilterText, parse_filter, parse_order, query_parameter
from .deps import MAX_ID_CHARS, RuntimeDep, TaskId

__all__ = ["router"]

router = APIRouter(tags=["tasks"])

MAX_PAGE = 500
MAX_REPEATS = 64  # times a repeatable parameter may be given
MAX_ITEM_CHARS = 400  # a label, a status, a time, an amount, a sort
MAX_CURSOR_CHARS = 2048


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SubmitBody(_Body):
    """An agent task to queue for the workers, as `ratchet submit` makes one."""

    instruction: str = Field(min_length=1, description="What the agent is to do.")
    model: str | None = Field(
        default=None,
        description="provider:name, e.g. openai:gpt-4o-mini or scripted:PATH.json "
        "(default: the server's --model, RATCHET_MODEL or [model] default of its ratchet.toml).",
    )
    name: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    tools: list[str] = Field(default_factory=list, description="Tool sources: .py files or module names.")
    instructions: str = Field(default="", description="How the agent works, for every prompt.")
    inputs: dict[str, JsonValue] | None = None
    labels: dict[str, str] | None = Field(
        default=None, description="KEY: VALUE pairs to find the task by (GET /api/tasks?label=KEY=VALUE)."
    )
    priority: int = Field(default=PRIORITY_DEFAULT, ge=PRIORITY_MIN, le=PRIORITY_MAX)
    max_steps: int | None = Field(default=None, ge=1, le=1_000_000)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    deadline: str | None = Field(default=None, description="How long it may take from now: 30m, 2h, 1d.")
    approval_for: list[RiskLevel] | None = Field(
        default=None,
        description="The risk levels whose tool calls wait for a person's approval "
        "(default: external_action).",
    )
    at: dt.datetime | None = Field(default=None, description="Start no sooner than this time.")
    queue: str | None = Field(
        default=None,
        description="The queue it runs in: at most the queue's concurrency of its tasks run at once "
        "(`ratchet limit set queue:NAME --concurrency N`).",
    )
    partition: str | None = Field(
        default=None, description="With queue: the partition (a tenant) the queue's concurrency holds per."
    )


class CancelBody(_Body):
    reason: str = Field(default="cancelled by a person", min_length=1, max_length=10_000)


class RetryBody(_Body):
    from_step: int | None = Field(default=None, ge=1, description="Start from this step (from 1).")


class ForkBody(_Body):
    checkpoint: int | None = Field(
        default=None, ge=1, le=2**31, description="The checkpoint to start from (from 1); or step."
    )
    step: int | None = Field(
        default=None,
        ge=1,
        le=2**31,
        description="The step to start at (from 1), as a retry from it; or checkpoint.",
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="The model of every call the new task makes live.",
    )
    instructions: str | None = Field(default=None, description="The new task's instruction.")
    tool_results: dict[int, JsonValue] | None = Field(
        default=None, description="A result per seq of a journaled tool call the new task keeps and replays."
    )
    inputs: dict[str, JsonValue] | None = Field(
        default=None,
        description="Inputs to change in the new task (the others stay); not one the task reads code from.",
    )
    inputs_json: str | None = Field(
        default=None,
        max_length=1_000_000,
        description="The same as JSON text (one object), read by the server: every integer as typed.",
    )


# Each parameter bounded where FastAPI reads it (422 beyond), so a query stays a few kilobytes; the
# filter parser checks the rest (400), in the words `ratchet tasks` uses.
_Exact = Annotated[str | None, Query(max_length=MAX_ID_CHARS)]
_Item = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]
_Items = Annotated[list[_Item] | None, Query(max_length=MAX_REPEATS)]
_Short = Annotated[str | None, Query(max_length=MAX_ITEM_CHARS)]


@router.get("/tasks", summary="List tasks a page at a time: filtered, sorted, counted")
async def list_tasks(
    rt: RuntimeDep,
    search: Annotated[
        str | None,
        Query(
            max_length=MAX_SEARCH_CHARS,
            description="Words each of which starts a word of the task's name, instruction, "
            "or (once it ended) result or error; any case.",
        ),
    ] = None,
    label: Annotated[_Items, Query(description="KEY=VALUE; repeat: every one.")] = None,
    status: Annotated[_Items, Query(description="Repeat: any of them.")] = None,
    waiting_on: Annotated[_Items, Query(description="What a waiting task waits on; repeat: any.")] = None,
    name: _Exact = None,
    agent: _Exact = None,
    model: _Exact = None,
    code_version: Annotated[_Exact, Query(description="The version of the code it started on.")] = None,
    parent: Annotated[_Exact, Query(description="The parent task's id.")] = None,
    id_prefix: _Exact = None,
    created_after: Annotated[_Short, Query(description="ISO 8601, or how long ago: 2h.")] = None,
    created_before: _Short = None,
    min_cost: Annotated[_Short, Query(description="US dollars.")] = None,
    max_cost: Annotated[_Short, Query(description="US dollars.")] = None,
    sort: Annotated[
        str,
        Query(
            max_length=MAX_ITEM_CHARS,
            description="created, updated, name, status or cost; -cost: descending.",
        ),
    ] = "created",
    cursor: Annotated[
        str | None, Query(max_length=MAX_CURSOR_CHARS, description="The next_cursor of the page before.")
    ] = None,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
) -> dict[str, Any]:
    """The tasks that match every filter given, a page of them, as `ratchet tasks --json` prints each.

    The store filters, sorts, counts and pages (`list_task_rows`); only the
    page's records are read. ``total`` is how many match; ``next_cursor``
    (None on the last page) is given back as ``cursor`` for the next page,
    which starts after this one's last task whatever was made meanwhile;
    ``next_offset`` pages by count instead (None with a cursor, and on the
    last page). ``unreadable`` lists the rows of this page that cannot be
    read (as ``total`` counts them). docs/finding-tasks.md says what each
    filter keeps; a bad one is a 400 with one line. ``replica`` is None
    unless the store has a read replica (``?read_url=``): then where the
    page was read and how far behind it was (docs/stores.md, "Read replicas").
    """
    given = FilterText(
        status=status or (),
        waiting_on=waiting_on or (),
        name=name,
        agent=agent,
        model=model,
        code_version=code_version,
        parent=parent,
        id_prefix=id_prefix,
        label=label or (),
        search=search,
        since=created_after,
        until=created_before,
        min_cost=min_cost,
        max_cost=max_cost,
    )
    where = parse_filter(given, query_parameter)
    order = parse_order(sort, query_parameter)
    after = None if cursor is None else TaskCursor.decode(cursor)
    check_cursor(order, after)
    unreadable: list[CorruptRecord] = []
    async with rt.store.listing() as (tx, replica):
        total = await tx.count_task_rows(where)
        rows = await tx.list_task_rows(
            where, order=order, after=after, limit=limit + 1, offset=offset, unreadable=unreadable
        )
        shown, more = rows[:limit], len(rows) > limit
        page = await tx.get_tasks([row.id for row in shown], unreadable=unreadable)
    return {
        "tasks": [task_json(task) for task in page],
        "total": total,
        "next_cursor": TaskCursor.after(shown[-1], order).encode() if more else None,
        "next_offset": offset + limit if after is None and offset + limit < total else None,
        "unreadable": [unreadable_json(row) for row in unreadable],
        "replica": None if replica is None else replica.as_json(),
    }


@router.get("/tasks/{task_id}", summary="One task: what `ratchet show --json` prints")
async def get_task(rt: RuntimeDep, task_id: TaskId) -> dict[str, Any]:
    """The task, its steps, latest events, what it waits on, its pending messages, children and spend."""
    async with rt.store.reading() as tx:
        return task_view_json(await load_task_view(tx, task_id))


@router.post("/tasks", status_code=201, summary="Queue an agent task for the workers")
async def submit_task(rt: RuntimeDep, body: SubmitBody, request: Request) -> dict[str, Any]:
    """Build the agent as `ratchet submit` (and MCP's ``create_task``) does and queue its task.

    The tool sources are checked here, loading only code the server's trust
    admits; a `ratchet worker` runs the task.
    """
    default_model: str | None = request.app.state.default_model
    return task_json(
        await submit_agent_task(rt, AgentRequest(**body.model_dump()), default_model=default_model)
    )


@router.post("/tasks/{task_id}/cancel", summary="Cancel a task that has not ended")
async def cancel_task(rt: RuntimeDep, task_id: TaskId, body: CancelBody | None = None) -> dict[str, Any]:
    """The worker running it stops at its next write; its children are cancelled too (409 if it ended)."""
    return task_json(await rt.cancel(task_id, reason=(body or CancelBody()).reason))


@router.post("/tasks/{task_id}/resume", summary="Queue a task for a worker to carry on")
async def resume_task(rt: RuntimeDep, task_id: TaskId) -> dict[str, Any]:
    """Queue the task for any `ratchet worker`; nothing runs in the server itself.

    The same refusals as `ratchet resume` (409): the task failed or was
    cancelled (retry it), waits on a person, is held by a live worker, or
    was set aside as stale. A completed task is returned as it is.
    """
    async with rt.store.transaction() as tx:
        task = await tx.get_task(task_id)
        if task.status is TaskStatus.COMPLETED:
            return task_json(task)
        if task.status.is_terminal:
            raise CannotResume(f"task {task_id} is already {task.status}; retry it to start a new attempt")
        if (
            task.waiting_on is not None
            and task.waiting_on.needs_person
            and task.waiting_on is not WaitReason.CODE
        ):
            raise CannotResume(
                f"task {task_id} waits on {task.waiting_on}; settle that first (approve, answer or resolve)"
            )
        lease = await tx.get_lease(task_id)
        if lease is not None and lease.is_live():
            raise CannotResume(f"task {task_id} is held by the live worker {lease.owner}; it carries it on")
        await tx.put_trigger(Trigger(kind="wake", task_id=task_id, dedupe_key=f"{task_id}:resume"))
        return task_json(task)


@router.post("/tasks/{task_id}/retry", status_code=201, summary="Start a new attempt of an ended task")
async def retry_task(rt: RuntimeDep, task_id: TaskId, body: RetryBody | None = None) -> dict[str, Any]:
    """A new task linked to this failed or cancelled one, queued for a worker (409 otherwise)."""
    new_id = await rt.retry(task_id, from_step=(body or RetryBody()).from_step)
    return task_json(await rt.store.get_task(new_id))


@router.post("/tasks/{task_id}/fork", status_code=201, summary="Start a new task from a checkpoint")
async def fork_task(rt: RuntimeDep, task_id: TaskId, body: ForkBody) -> dict[str, Any]:
    """What `ratchet fork --json` prints: the new task's id, the original's and the checkpoint (or step).

    ``inputs`` (or ``inputs_json``, the same as JSON text) changes those inputs
    in the new task, which reads them from the checkpoint on (400 for an input
    the task reads code from, such as an agent's spec). ``model``,
    ``instructions`` and ``tool_results`` are the what-if overrides of
    `ratchet fork` (400 for a seq that is not a tool call the fork keeps).
    """
    inputs = body.inputs
    if body.inputs_json is not None:
        if inputs is not None:
            raise InputError("give the changed inputs once: inputs or inputs_json, not both")
        inputs = read_json_object(body.inputs_json, "the changed inputs", '{"city": "Oslo"}')
    await rt.store.get_task(task_id)  # an unknown task is named as such, not as a checkpoint
    new_id = await rt.fork(
        task_id,
        body.checkpoint,
        step=body.step,
        inputs=inputs,
        model=body.model,
        instructions=body.instructions,
        tool_results=body.tool_results,
    )
    point = {"checkpoint": body.checkpoint} if body.checkpoint is not None else {"step": body.step}
    return {"task_id": new_id, "forked_from": task_id, **point}

"""What every `ratchet` command module shares: options, the event loop, opening the store.

`ratchet.cli` builds the Typer app and registers the commands; the command
modules (`cli_run`, `cli_admin`) use only this module and `cli_render`, so
none of them imports `ratchet.cli`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Annotated, Any, TypeVar

import typer

from . import cli_render as render
from .errors import StoreNotFound, TaskNotFound
from .engine.people import pending_question, question_text
from .model import Approval, Operation, OpKind, OpStatus, Task, WaitReason, utcnow
from .store import StateStore, StoreOps, open_store

__all__ = [
    "JsonOption",
    "StoreOption",
    "TaskArgument",
    "in_doubt_ops",
    "open_for_task",
    "open_question",
    "open_store_for",
    "pending_approvals",
    "run_async",
]

T = TypeVar("T")

StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="RATCHET_STORE",
        metavar="URL",
        help="Where Ratchet keeps its state: sqlite:///PATH, sqlite:////ABS/PATH, postgresql://USER@HOST/DB or memory://.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
TaskArgument = Annotated[str, typer.Argument(metavar="TASK", help="The task's id.")]


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine to its end."""
    return asyncio.run(work)


@contextlib.asynccontextmanager
async def open_store_for(url: str, *, create: bool) -> AsyncIterator[StateStore]:
    """Open the store at `url` for one command and close it afterwards.

    Raises:
        StoreNotFound: `create` is False and the database does not exist.
    """
    store = await open_store(url, create=create)
    try:
        yield store
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def open_for_task(url: str, task_id: str) -> AsyncIterator[StateStore]:
    """Open an existing store to work on one task; no database means no such task."""
    try:
        store = await open_store(url, create=False)
    except StoreNotFound:
        raise TaskNotFound(task_id) from None
    try:
        yield store
    finally:
        await store.close()


async def pending_approvals(tx: StoreOps, task: Task) -> list[Approval]:
    """Return the tool calls waiting for a person's approval (``ratchet approve`` / ``deny``)."""
    if task.waiting_on is not WaitReason.APPROVAL:
        return []
    return await tx.list_approvals(task.id, pending_only=True)


async def open_question(tx: StoreOps, task: Task) -> str | None:
    """Return the question a task waiting for input asks (``ratchet answer``), or None."""
    if task.waiting_on is not WaitReason.INPUT:
        return None
    asked = await pending_question(tx, task.id)
    return None if asked is None else question_text(asked)


async def in_doubt_ops(tx: StoreOps, task: Task) -> list[Operation]:
    """Return the tool calls a person must settle (`ratchet resolve`) before the task goes on.

    When the task waits ``in_doubt``: its tool operations that were started
    and have no result (the worker stopped while they were in flight).
    """
    if task.waiting_on is not WaitReason.IN_DOUBT:
        return []
    return [
        op
        for op in await tx.list_ops(task.id)
        if op.status is OpStatus.STARTED and op.kind is OpKind.TOOL
    ]


async def load_outcome(store: StateStore, task: Task) -> render.Outcome:
    """How a task was left, with what it waits on, for the outcome view."""
    wakes_at = None
    if task.waiting_on is WaitReason.TIMER:
        now = utcnow()  # a trigger already due is a start the run here made moot
        times = [
            trigger.fire_at
            for trigger in await store.list_triggers(task.id)
            if trigger.fire_at > now
        ]
        wakes_at = min(times, default=None)
    return render.Outcome(
        task=task,
        in_doubt=await in_doubt_ops(store, task),
        pending_approvals=await pending_approvals(store, task),
        question=await open_question(store, task),
        wakes_at=wakes_at,
    )

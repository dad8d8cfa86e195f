"""`ratchet delete`: remove an ended task and everything stored of it, for good.

What may be deleted is the store's decision (`delete_task`,
store/ops/task_delete.py): an ended task no worker holds, with no child tasks
left. Nothing is deleted unasked: ``--yes``, or a "y" at the prompt when
standard input is a terminal; without either, bad input (exit 2).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import CannotDelete
from ..store import DEFAULT_STORE_URL
from . import render
from .options import ForceOpenOption, StoreOption, TaskArgument
from .store_access import open_for_task, run_async

__all__ = ["delete_command"]


def delete_command(
    task_id: TaskArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Delete an ended task and all of it (journal, events, messages, artifacts, checkpoints).

    Only a completed, failed or cancelled task no worker holds, whose child
    tasks were deleted first. Asks first unless --yes; with no terminal to ask
    on, --yes is needed (exit 2 without it).
    """
    what = run_async(_describe(store, task_id))
    if not yes:
        if not sys.stdin.isatty():
            raise CannotDelete(f"deleting task {task_id} cannot be undone; give --yes to delete it")
        typer.confirm(f"Delete {what} for good?", abort=True)
    run_async(_delete(store, task_id))
    render.print_line(f"task {task_id} deleted")


async def _describe(url: str, task_id: str) -> str:
    async with open_for_task(url, task_id) as store:
        task = await store.get_task(task_id)
        ops = await store.list_ops(task_id)
    return f"task {task_id} ({task.name}, {task.status_text}, {len(ops)} journaled operations)"


async def _delete(url: str, task_id: str) -> None:
    async with open_for_task(url, task_id) as store:
        await store.delete_task(task_id)

"""`ratchet delete`: remove an ended task and everything stored of it, for good.

What may be deleted is the store's decision (`delete_task`,
store/ops/task_delete.py): an ended task no worker holds, with no child tasks
left. Nothing is deleted unasked: ``--yes``, or a "y" at the prompt when
standard input is a terminal; without either, bad input (exit 2). With
filters instead of a TASK (`ratchet.cli.batch`), every task they match,
newest first (a child before its parent): without ``--yes`` (and no
terminal to ask on), only how many, exit 0.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import CannotDelete
from ..store import DEFAULT_STORE_URL
from . import json_output, render
from .batch import Verb, batch_filter, run_batch
from .filter_options import NO_FILTERS, FilterOptions, with_filter_options
from .options import ForceOpenOption, JsonOption, OptionalTaskArgument, StoreOption
from .store_access import open_for_task, run_async

__all__ = ["delete_command"]


@with_filter_options
def delete_command(
    task_id: OptionalTaskArgument = None,
    filters: FilterOptions = NO_FILTERS,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Delete without asking (with filters: every task they match).")
    ] = False,
    as_json: JsonOption = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Delete an ended task and all of it (journal, events, messages, artifacts, checkpoints).

    Only a completed, failed or cancelled task no worker holds, whose child
    tasks were deleted first. Asks first unless --yes; with no terminal to ask
    on, --yes is needed (exit 2 without it). With the filters of `ratchet
    tasks` instead of TASK, every task they match: without --yes, only how
    many (and the first few), exit 0; with it, each one that may be deleted.
    """
    where = batch_filter(task_id, filters, verb="delete")
    if where is not None:
        run_batch(
            Verb("delete", "deleted"),
            where,
            store=store,
            yes=yes,
            as_json=as_json,
            act=lambda runtime: runtime.delete_tasks(where),
        )
        return
    assert task_id is not None
    what = run_async(_describe(store, task_id))
    if not yes:
        if not sys.stdin.isatty():
            raise CannotDelete(f"deleting task {task_id} cannot be undone; give --yes to delete it")
        typer.confirm(f"Delete {what} for good?", abort=True)
    run_async(_delete(store, task_id))
    if as_json:
        json_output.print_json({"task_id": task_id, "deleted": True})
        return
    render.print_line(f"task {task_id} deleted")


async def _describe(url: str, task_id: str) -> str:
    async with open_for_task(url, task_id) as store:
        task = await store.get_task(task_id)
        ops = await store.list_ops(task_id)
    return f"task {task_id} ({task.name}, {task.status_text}, {len(ops)} journaled operations)"


async def _delete(url: str, task_id: str) -> None:
    async with open_for_task(url, task_id) as store:
        await store.delete_task(task_id)

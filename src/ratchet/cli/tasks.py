"""`ratchet tasks`, `ratchet show` and `ratchet events`: look at tasks; they never write.

The store is opened with ``create=False``: looking never creates a database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated

import typer

from ..errors import CorruptRecord, InputError, StoreNotFound
from ..event_feed import follow_events
from ..model import Event, Task, TaskStatus
from ..store import DEFAULT_STORE_URL
from . import json_output, render
from .completion import complete_status
from .options import ForceOpenOption, JsonOption, StoreOption, TaskArgument
from .store_access import open_for_task, open_store_for, run_async
from .views import TaskView, in_tree_order, load_task_view

__all__ = ["events_command", "parse_status", "show_command", "tasks_command"]

# The longest wait for news when nothing is heard; SQLite looks every 0.2 s anyway (the store's poll).
FOLLOW_IDLE_SECONDS = 30.0


def parse_status(text: str) -> TaskStatus:
    """Return the task status `text` names.

    Raises:
        InputError: `text` names no status.
    """
    try:
        return TaskStatus(text.strip().lower())
    except ValueError:
        names = ", ".join(status.value for status in TaskStatus)
        raise InputError(f"unknown status {text!r}; use one of {names}") from None


# --------------------------------------------------------------------------- tasks


def tasks_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            autocompletion=complete_status,
            help="Only tasks with this status: queued, running, waiting, completed, failed or cancelled.",
        ),
    ] = None,
    tree: Annotated[
        bool,
        typer.Option("--tree", help="Show each task's child tasks under it, indented (JSON: with a depth)."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List tasks, oldest first (then those whose stored rows cannot be read, as `unreadable`)."""
    wanted = parse_status(status) if status is not None else None
    tasks, unreadable = run_async(_list_tasks(store, wanted))
    if as_json:
        listed = in_tree_order(tasks) if tree else [(0, task) for task in tasks]
        json_output.print_json(
            [{**json_output.task_json(task), **({"depth": depth} if tree else {})} for depth, task in listed]
            + [json_output.unreadable_json(row) for row in unreadable]
        )
    else:
        render.print_tasks(tasks, store_url=store, status=wanted, unreadable=unreadable, tree=tree)


async def _list_tasks(url: str, status: TaskStatus | None) -> tuple[list[Task], list[CorruptRecord]]:
    unreadable: list[CorruptRecord] = []
    try:
        async with open_store_for(url, create=False) as store:
            return await store.list_tasks(status, unreadable=unreadable), unreadable
    except StoreNotFound:
        return [], []  # nothing was ever stored there: an empty listing, not an error


# --------------------------------------------------------------------------- show


def show_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show one task: its status, steps, what it waits on and its latest events."""
    view = run_async(_load_task_view(store, task_id))
    if as_json:
        json_output.print_json(json_output.task_view_json(view))
    else:
        render.print_task_view(view, store_url=store)


async def _load_task_view(url: str, task_id: str) -> TaskView:
    async with open_for_task(url, task_id) as store, store.reading() as tx:
        return await load_task_view(tx, task_id)


# --------------------------------------------------------------------------- events


def events_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing new events until the task ends."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print a task's events, oldest first (one JSON object per line with --json)."""
    printer = _print_event_json if as_json else _print_event
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends following; not an error
        run_async(_print_events(store, task_id, follow=follow, printer=printer))


def _print_event(item: Event | CorruptRecord) -> None:
    if isinstance(item, Event):
        render.print_event(item)
    else:
        render.print_unreadable_event(item)


def _print_event_json(item: Event | CorruptRecord) -> None:
    shown = json_output.event_json(item) if isinstance(item, Event) else json_output.unreadable_json(item)
    json_output.print_json_line(shown)


async def _print_events(
    url: str, task_id: str, *, follow: bool, printer: Callable[[Event | CorruptRecord], None]
) -> None:
    async with open_for_task(url, task_id) as store:
        async for batch in follow_events(store, task_id, follow=follow, idle=FOLLOW_IDLE_SECONDS):
            for item in batch:
                printer(item)
            render.flush()

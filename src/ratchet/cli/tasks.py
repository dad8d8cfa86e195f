"""`ratchet tasks`, `ratchet show` and `ratchet events`: look at tasks; they never write.

The store is opened with ``create=False``: looking never creates a database.
`ratchet tasks` reads on the store's read replica when its URL names one
(``?read_url=``), and says so, with how far behind it was (in a line after
the table; on stderr with --json, and as ``replica`` in --count's JSON);
`show` and `events` read the store itself (docs/stores.md, "Read replicas").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import typer

from ..errors import CorruptRecord, StoreNotFound
from ..records import Checkpoint, Event, TaskFilter, TaskOrder, TaskRow
from ..store import DEFAULT_STORE_URL, ReplicaRead
from ..views.event_feed import follow_events
from ..views.task_filter import cli_option, parse_order
from . import json_output, render
from .filter_options import NO_FILTERS, FilterOptions, with_filter_options
from .options import MAX_COUNT, ForceOpenOption, JsonOption, StoreOption, TaskArgument
from .store_access import open_for_task, open_store_for, run_async
from .views import TaskView, in_tree_order, load_task_view

__all__ = ["events_command", "show_command", "tasks_command"]

# The longest wait for news when nothing is heard; SQLite looks every 0.2 s anyway (the store's poll).
FOLLOW_IDLE_SECONDS = 30.0


# --------------------------------------------------------------------------- tasks

DEFAULT_LIMIT = 50


# How many whole records --json reads and prints at a time: the most it holds, however many it lists.
JSON_PAGE = 200


@dataclass(frozen=True)
class _Listing:
    rows: list[TaskRow]
    total: int  # how many tasks pass the filter, listed or not
    unreadable: list[CorruptRecord]
    replica: ReplicaRead | None = None  # where it was read, when the store has a read replica


@with_filter_options
def tasks_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    filters: FilterOptions = NO_FILTERS,
    sort: Annotated[
        str,
        typer.Option(
            "--sort",
            metavar="COLUMN",
            help="Order by created, updated, name, status or cost (-cost: descending).",
        ),
    ] = "created",
    desc: Annotated[bool, typer.Option("--desc", help="Descending: newest (or largest) first.")] = False,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            min=0,
            max=MAX_COUNT,
            help="List at most this many (0: all); says how many more there are.",
        ),
    ] = DEFAULT_LIMIT,
    offset: Annotated[
        int, typer.Option("--offset", min=0, max=MAX_COUNT, help="Skip this many first (the next page).")
    ] = 0,
    count: Annotated[
        bool, typer.Option("--count", help='Print only how many tasks match (JSON: {"count": N}).')
    ] = False,
    tree: Annotated[
        bool,
        typer.Option("--tree", help="Show each task's child tasks under it, indented (JSON: with a depth)."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """List tasks, oldest first, at most --limit of them (then the rows that cannot be read, as `unreadable`).

    Filters combine: a task is listed when it passes every one given. The
    table reads only the columns it shows; --json prints the listed tasks'
    whole records.
    """
    where = filters.where()
    page = _Page(parse_order(sort, cli_option, descending=desc), limit or None, offset)
    if count:
        found, replica = run_async(_count_tasks(store, where))
        if as_json:
            json_output.print_json({"count": found, **({"replica": replica.as_json()} if replica else {})})
        else:
            render.print_line(str(found))  # alone on stdout: `$(ratchet tasks --count)` stays a number
            _note_replica(replica)
        return
    if as_json:
        more, replica = run_async(_print_records(store, where, page, tree=tree))
        if more > 0:
            render.print_note(
                f"{more} more; raise --limit (0 for all), page with --offset or narrow the filters"
            )
        _note_replica(replica)
        return
    listing = run_async(_list_tasks(store, where, page))
    render.print_tasks(listing.rows, store_url=store, where=where, unreadable=listing.unreadable, tree=tree)
    more = listing.total - offset - len(listing.rows)
    if more > 0:
        render.print_line(
            f"… {more} more (of {listing.total}); raise --limit (0 for all), page with "
            f"--offset {offset + len(listing.rows)}, or narrow the filters."
        )
    if listing.replica is not None:
        render.print_line(f"Listed {listing.replica.describe()}.")


def _note_replica(replica: ReplicaRead | None) -> None:
    """Where a listing was read, on stderr (beside JSON, or a bare count), when the store has a replica."""
    if replica is not None:
        render.print_note(f"listed {replica.describe()}")


@dataclass(frozen=True)
class _Page:
    order: TaskOrder
    limit: int | None
    offset: int


async def _count_tasks(url: str, where: TaskFilter) -> tuple[int, ReplicaRead | None]:
    try:
        async with open_store_for(url, create=False) as store, store.listing() as (tx, replica):
            return await tx.count_task_rows(where), replica
    except StoreNotFound:
        return 0, None  # nothing was ever stored there: none match, not an error


async def _list_tasks(url: str, where: TaskFilter, page: _Page) -> _Listing:
    unreadable: list[CorruptRecord] = []
    try:
        async with open_store_for(url, create=False) as store, store.listing() as (tx, replica):
            rows = await tx.list_task_rows(
                where, order=page.order, limit=page.limit, offset=page.offset, unreadable=unreadable
            )
            return _Listing(rows, await tx.count_task_rows(where), unreadable, replica)
    except StoreNotFound:
        return _Listing([], 0, [])  # nothing was ever stored there: an empty listing, not an error


async def _print_records(
    url: str, where: TaskFilter, page: _Page, *, tree: bool
) -> tuple[int, ReplicaRead | None]:
    """Print the listed tasks' whole records as one JSON list, `JSON_PAGE` at a time.

    Returns how many more match, and where they were read (`ReplicaRead`, or None).

    The listing's rows come first, in one walk of the index the table walks
    (their ids are all that is kept of them), then the records, a page at a
    time (`get_tasks`). The rows that cannot be read come last, as
    `unreadable`. One reading transaction sees it all: the pages neither skip
    nor repeat a task another process creates or deletes meanwhile.
    """
    printed = json_output.JsonList()
    unreadable: list[CorruptRecord] = []
    more, replica = 0, None
    try:
        async with open_store_for(url, create=False) as store, store.listing() as (tx, replica):
            rows = await tx.list_task_rows(
                where, order=page.order, limit=page.limit, offset=page.offset, unreadable=unreadable
            )
            more = await tx.count_task_rows(where) - page.offset - len(rows)
            listed = [(depth, row.id) for depth, row in (in_tree_order(rows) if tree else _flat(rows))]
            del rows
            for start in range(0, len(listed), JSON_PAGE):
                depths = {task_id: depth for depth, task_id in listed[start : start + JSON_PAGE]}
                for task in await tx.get_tasks(list(depths), unreadable=unreadable):
                    shown = json_output.task_json(task)
                    printed.add({**shown, "depth": depths[task.id]} if tree else shown)
                printed.flush()
    except StoreNotFound:
        pass  # nothing was ever stored there: an empty listing, not an error
    for corrupt in unreadable:
        printed.add(json_output.unreadable_json(corrupt))
    printed.close()
    return more, replica


def _flat(rows: list[TaskRow]) -> list[tuple[int, TaskRow]]:
    return [(0, row) for row in rows]


# --------------------------------------------------------------------------- show


def show_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show one task: its status, steps, what it waits on, its checkpoints and latest events."""
    view, checkpoints = run_async(_load_task_view(store, task_id))
    if as_json:
        shown = json_output.task_view_json(view)
        shown["checkpoints"] = [json_output.checkpoint_json(saved) for saved in checkpoints]
        json_output.print_json(shown)
    else:
        render.print_task_view(view, store_url=store)
        render.print_checkpoints(view.task, checkpoints, store_url=store)


async def _load_task_view(url: str, task_id: str) -> tuple[TaskView, list[Checkpoint]]:
    async with open_for_task(url, task_id) as store, store.reading() as tx:
        return await load_task_view(tx, task_id), await tx.list_checkpoints(task_id)


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

"""`ratchet export`: every task the filters of `ratchet tasks` match, one JSON line each, to archive.

A line is the task's record as ``ratchet tasks --json`` prints it (its id as
``task_id``), with three more keys: ``steps`` (its plan's steps),
``journal`` (every journaled call, by seq, as ``GET /api/tasks/{id}/journal``
and ``ratchet journal --json`` read them from the store) and ``events``
(oldest first, as ``ratchet events --json``). A task whose record cannot be
read is a line ``{"task_id", "unreadable"}``. Tasks go oldest first.

It streams: the tasks are walked a page at a time (`ratchet.engine.batches`),
each page read in a transaction of its own and written before the next is
read, so its memory is a page of records and one task's journal, however
many tasks there are; a task made after the export started is not in it.
The count goes to stderr at the end, where it stays out of the lines.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..engine.batches import task_pages
from ..errors import CorruptRecord, StoreNotFound
from ..printable import printable_json
from ..records import OLDEST_FIRST, Event, TaskFilter
from ..store import DEFAULT_STORE_URL
from ..store.ops import StoreOps
from ..views.record_json import event_json, operation_json, step_json, task_json, unreadable_json
from . import render
from .filter_options import NO_FILTERS, FilterOptions, with_filter_options
from .options import ForceOpenOption, StoreOption
from .store_access import open_store_for, run_async

__all__ = ["export_command", "export_line"]


@with_filter_options
def export_command(
    filters: FilterOptions = NO_FILTERS,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: Annotated[bool, typer.Option("--json", hidden=True, help="The only output there is.")] = False,
) -> None:
    """Write each task the filters match as one JSON line (record, steps, journal, events), oldest first.

    The filters are those of `ratchet tasks`; without any, every task.
    `ratchet export --status completed --until 30d > old.jsonl` archives
    what `ratchet delete` with the same filters then deletes.
    """
    where = filters.where()
    written = run_async(_export(store, where))
    render.print_note(f"exported {written} task{'' if written == 1 else 's'}")


async def _export(url: str, where: TaskFilter) -> int:
    written = 0
    try:
        async with open_store_for(url, create=False) as store:
            async for rows in task_pages(store, where, order=OLDEST_FIRST):
                async with store.reading() as tx:
                    unreadable: list[CorruptRecord] = []
                    tasks = await tx.get_tasks([row.id for row in rows], unreadable=unreadable)
                    for task in tasks:
                        sys.stdout.write(
                            printable_json(await export_line(tx, task.id, task_json(task))) + "\n"
                        )
                    for corrupt in unreadable:
                        sys.stdout.write(printable_json(unreadable_json(corrupt)) + "\n")
                written += len(tasks) + len(unreadable)
                sys.stdout.flush()
    except StoreNotFound:
        return 0  # nothing was ever stored there: nothing to export
    return written


async def export_line(tx: StoreOps, task_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """`record` (a task's JSON) with the task's ``steps``, ``journal`` and ``events``."""
    unreadable: list[CorruptRecord] = []
    events: list[Event] = await tx.list_events(task_id, unreadable=unreadable)
    return {
        **record,
        "steps": [step_json(step) for step in await tx.list_steps(task_id)],
        "journal": [operation_json(op) for op in await tx.list_ops(task_id)],
        "events": [event_json(event) for event in events] + [unreadable_json(row) for row in unreadable],
    }

"""`ratchet journal TASK`: a task's journaled calls in seq order; it never writes.

The entries come from `ratchet.views.journal`, as the HTTP API's
``/api/tasks/{id}/journal`` gives them: ``--json`` prints the same records.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from ..printable import plain, printable_json
from ..records import OpStatus
from ..store import DEFAULT_STORE_URL
from ..views.journal import Journal, JournalEntry, journal_entry_json, load_journal, preview
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption, TaskArgument
from .store_access import open_for_task, run_async

__all__ = ["journal_command", "journal_duration"]

# Previews in the table are shorter than the API's: the table has ten columns.
TABLE_PREVIEW_CHARS = 60

_STATUS_STYLES = {OpStatus.SUCCEEDED: "green", OpStatus.FAILED: "red", OpStatus.STARTED: "yellow"}


def journal_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    full: Annotated[
        bool, typer.Option("--full", help="Each call's whole input and output, not a preview.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a task's journaled calls in seq order: what ran, in which run, replayed or live,
    in doubt or retried (each earlier attempt under its call)."""
    found = run_async(_load(store, task_id))
    if as_json:
        json_output.print_json([journal_entry_json(entry, full=full) for entry in found.entries])
    else:
        _print_journal(found, full=full, store_url=store)


async def _load(url: str, task_id: str) -> Journal:
    async with open_for_task(url, task_id) as store, store.reading() as tx:
        return await load_journal(tx, task_id)


def _value(value: object, *, full: bool) -> Text:
    if value is None:
        return Text("-")
    if full:
        return plain(printable_json(value, indent=2))  # type: ignore[arg-type]
    return plain(preview(value, chars=TABLE_PREVIEW_CHARS) or "-")


def _status(entry: JournalEntry) -> Text:
    op = entry.op
    if entry.in_doubt:
        return Text("in doubt", style="bold red")
    if op.status is OpStatus.STARTED:
        return Text("running", style="yellow")
    shown = str(op.status) + (" (retry due)" if op.retry_pending else "")
    if entry.was_in_doubt is not None:
        shown += f", was in doubt: {entry.was_in_doubt}"
    return Text(shown, style=_STATUS_STYLES[op.status])


def journal_duration(value: float | None) -> str:
    """A duration people read at a glance: 53 µs, 0.30 ms, 304 ms, 1.5 s, 2 min 5 s."""
    if value is None:
        return "-"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.3g} ms"
    if value < 60:
        return f"{value:.3g} s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes} min {seconds} s"


def _print_journal(found: Journal, *, full: bool, store_url: str) -> None:
    task = found.task
    if not found.entries:
        render.print_line(f"Task {task.id} has journaled no calls yet.")
        return
    runs = len(found.runs)
    render.print_line(
        f"Journal of task {task.id} ({task.status_text}): {len(found.entries)} calls, "
        f"{runs} run{'s' if runs != 1 else ''}."
    )
    table = Table()
    render.add_id_column(table, "seq", [str(entry.op.seq) for entry in found.entries])
    for header in ("kind", "name", "attempt", "status", "run", "started", "took", "idempotency key"):
        table.add_column(header, overflow="fold")
    table.add_column("input", overflow="fold")
    table.add_column("output / error", overflow="fold")
    for entry in found.entries:
        op = entry.op
        run = "-" if entry.run is None else f"{entry.run} " + ("replayed" if entry.replayed else "live")
        table.add_row(
            str(op.seq),
            str(op.kind),
            plain(op.name),
            str(op.attempt),
            _status(entry),
            run,
            render.format_time(op.started_at),
            journal_duration(entry.duration),
            plain(op.idempotency_key),
            _value(op.input, full=full),
            plain(op.error) if op.error is not None else _value(op.output, full=full),
        )
        for attempt in entry.earlier:
            table.add_row(
                "",
                "",
                "",
                str(attempt.attempt),
                Text("failed, retried", style="red"),
                "",
                render.format_time(attempt.started_at),
                journal_duration(attempt.duration),
                "",
                "",
                plain(attempt.error),
            )
    render.print_table(table)
    if any(entry.in_doubt for entry in found.entries):
        render.print_line(
            "A call in doubt may or may not have happened; settle each with "
            + render.command("resolve", task.id, "--op", "SEQ", store_url=store_url)
            + " and --retry, --skip or --result JSON."
        )

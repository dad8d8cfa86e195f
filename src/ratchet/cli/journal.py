"""`ratchet journal TASK`: a task's journaled calls in seq order; it never writes.

The entries come from `ratchet.views.journal`, as the HTTP API's
``/api/tasks/{id}/journal`` gives them: ``--json`` prints the same records.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated

import typer
from rich.console import RenderableType
from rich.text import Text

from ..printable import plain, printable_json
from ..records import OpStatus, utcnow
from ..runtime.what_if import OVERRIDDEN
from ..store import DEFAULT_STORE_URL
from ..views.journal import Journal, JournalEntry, journal_entry_json, load_journal, preview
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption, TaskArgument
from .relative_time import relative_time
from .store_access import open_for_task, run_async
from .tables import Listing

__all__ = ["journal_command", "journal_duration"]

# Previews in the table are shorter than the API's: the table has ten columns.
TABLE_PREVIEW_CHARS = 60

# The journal's every column needs this many columns of terminal; a narrower one shows fewer.
WIDE_JOURNAL = 130

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
    if OVERRIDDEN in op.meta:
        shown += ", given by the fork"
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


# The journal's columns, and how each gives way on a narrow terminal (`ratchet.cli.tables`).
_COLUMNS: dict[str, Callable[[Listing, str], None]] = {
    "seq": Listing.id_column,
    "kind": partial(Listing.word_column, whole=True),
    "name": Listing.text_column,
    "attempt": Listing.word_column,
    "status": Listing.text_column,
    "run": Listing.word_column,
    "started": Listing.word_column,
    "took": Listing.word_column,
    "idempotency key": partial(Listing.word_column, whole=True),
    "input": Listing.preview_column,
    "output / error": Listing.preview_column,
}
# Below `WIDE_JOURNAL` columns of terminal these are left out (--json has them).
_WIDE_ONLY = ("kind", "attempt", "started", "idempotency key")


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
    wide = render.console.width >= WIDE_JOURNAL
    columns = [column for column in _COLUMNS if wide or column not in _WIDE_ONLY]
    listing = Listing()
    for column in columns:
        # A preview is cut already: cut further, it stays on one line; whole (--full), it wraps.
        add = Listing.text_column if full and column in ("input", "output / error") else _COLUMNS[column]
        add(listing, column)
    now = utcnow()
    for entry in found.entries:
        op = entry.op
        row: dict[str, RenderableType] = {
            "seq": str(op.seq),
            "kind": str(op.kind),
            "name": plain(op.name),
            "attempt": str(op.attempt),
            "status": _status(entry),
            "run": "-" if entry.run is None else f"{entry.run} " + ("replayed" if entry.replayed else "live"),
            "started": relative_time(op.started_at, now),
            "took": journal_duration(entry.duration),
            "idempotency key": plain(op.idempotency_key),
            "input": _value(op.input, full=full),
            "output / error": plain(op.error) if op.error is not None else _value(op.output, full=full),
        }
        listing.add_row(*(row[column] for column in columns))
        for attempt in entry.earlier:
            retried = "failed, retried" if wide else f"attempt {attempt.attempt} failed, retried"
            earlier: dict[str, RenderableType] = {
                "attempt": str(attempt.attempt),
                "status": Text(retried, style="red"),
                "started": relative_time(attempt.started_at, now),
                "took": journal_duration(attempt.duration),
                "output / error": plain(attempt.error),
            }
            listing.add_row(*(earlier.get(column, "") for column in columns))
    listing.print(render.console)
    if not wide:
        render.print_line(
            f"Left out below {WIDE_JOURNAL} columns: kind, attempt, start, idempotency key (see --json)."
        )
    for entry in found.entries:
        given = entry.op.meta.get(OVERRIDDEN)
        if isinstance(given, dict):
            render.print_line(
                f"Operation {entry.op.seq} ({entry.op.name}) replays the result this task was forked "
                f"with; it had recorded {preview(given.get('from'), chars=TABLE_PREVIEW_CHARS) or 'none'}"
                + (f" ({given['status']}: {given.get('error')})" if "status" in given else "")
                + "."
            )
    if any(entry.in_doubt for entry in found.entries):
        render.print_line(
            "A call in doubt may or may not have happened; settle each with "
            + render.command("resolve", task.id, "--op", "SEQ", store_url=store_url)
            + " and --retry, --skip or --result JSON."
        )

"""`ratchet journal TASK`: a task's journaled calls in seq order; it never writes.

The entries come from `ratchet.views.journal`, as the HTTP API's
``/api/tasks/{id}/journal`` gives them: ``--json`` prints the same records.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from ..printable import plain, printable_json
from ..records import OpStatus, utcnow
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


def _journal_listing(*, wide: bool, full: bool) -> Listing:
    """The journal's columns: on a narrow terminal, without those --json has (see `WIDE_JOURNAL`)."""
    listing = Listing()
    listing.id_column("seq")
    if wide:
        listing.word_column("kind", whole=True)
    listing.text_column("name")
    if wide:
        listing.word_column("attempt")
    listing.text_column("status")
    listing.word_column("run")
    if wide:
        listing.word_column("started")
    listing.word_column("took")
    if wide:
        listing.word_column("idempotency key", whole=True)
    for header in ("input", "output / error"):
        # A preview is cut already: cut further, it stays on one line; whole (--full), it wraps.
        if full:
            listing.text_column(header)
        else:
            listing.preview_column(header)
    return listing


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
    listing = _journal_listing(wide=wide, full=full)
    now = utcnow()
    for entry in found.entries:
        op = entry.op
        run = "-" if entry.run is None else f"{entry.run} " + ("replayed" if entry.replayed else "live")
        shown = (str(op.seq), plain(op.name), _status(entry), run, journal_duration(entry.duration))
        output = plain(op.error) if op.error is not None else _value(op.output, full=full)
        if wide:
            listing.add_row(
                *shown[:1],
                str(op.kind),
                shown[1],
                str(op.attempt),
                *shown[2:4],
                relative_time(op.started_at, now),
                shown[4],
                plain(op.idempotency_key),
                _value(op.input, full=full),
                output,
            )
        else:
            listing.add_row(*shown, _value(op.input, full=full), output)
        for attempt in entry.earlier:
            retried = Text("failed, retried", style="red")
            took = journal_duration(attempt.duration)
            if wide:
                started = relative_time(attempt.started_at, now)
                listing.add_row(
                    "", "", "", str(attempt.attempt), retried, "", started, took, "", "", plain(attempt.error)
                )
            else:
                listing.add_row(
                    "",
                    "",
                    Text(f"attempt {attempt.attempt} failed, retried", style="red"),
                    "",
                    took,
                    "",
                    plain(attempt.error),
                )
    listing.print(render.console)
    if not wide:
        render.print_line(
            f"Left out below {WIDE_JOURNAL} columns: kind, attempt, start, idempotency key (see --json)."
        )
    if any(entry.in_doubt for entry in found.entries):
        render.print_line(
            "A call in doubt may or may not have happened; settle each with "
            + render.command("resolve", task.id, "--op", "SEQ", store_url=store_url)
            + " and --retry, --skip or --result JSON."
        )

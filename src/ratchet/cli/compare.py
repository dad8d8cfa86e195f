"""`ratchet compare A B [C...]`: tasks side by side, one column a task; it never writes.

The comparison comes from `ratchet.views.compare`, as the HTTP API's
``/api/compare`` gives it: ``--json`` prints the same record. Each task's
column is headed by a letter (A, B, ...) and the letters are listed first with
the ids they stand for, so an id is never cut to fit a column.
"""

from __future__ import annotations

import string
from typing import Annotated

import typer
from rich.console import RenderableType
from rich.text import Text

from ..printable import plain
from ..records import Operation, Step
from ..store import DEFAULT_STORE_URL
from ..views.compare import Comparison, check_compared, comparison_json, load_comparison
from ..views.journal import preview
from . import json_output, render
from .completion import complete_task_id
from .journal import journal_duration
from .options import ForceOpenOption, JsonOption, StoreOption
from .store_access import open_for_task, run_async
from .tables import Listing

__all__ = ["compare_command"]

# A call's arguments and result in a table cell: short, since every task has a column.
CELL_PREVIEW_CHARS = 40

_MARK_STYLES = {"same": "green", "differs": "bold yellow", "only in": "bold yellow"}


def compare_command(
    task_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="TASK",
            help="The ids of the tasks to compare: 2 to 8 of them.",
            autocompletion=complete_task_id,
        ),
    ],
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show tasks side by side: each one's outcome, tokens, cost and wall time, its steps, the tool
    calls each made (and which differ), and where their journals part."""
    found = run_async(_load(store, check_compared(task_ids)))
    if as_json:
        json_output.print_json(comparison_json(found))
    else:
        _print_comparison(found)


async def _load(url: str, task_ids: list[str]) -> Comparison:
    async with open_for_task(url, task_ids[0]) as opened, opened.reading() as tx:
        return await load_comparison(tx, task_ids)


def _letters(count: int) -> list[str]:
    return list(string.ascii_uppercase[:count])


def _print_comparison(found: Comparison) -> None:
    letters = _letters(len(found.sides))
    ids = {side.task.id: letter for side, letter in zip(found.sides, letters, strict=True)}
    render.print_line(f"Comparing {len(found.sides)} tasks:")
    for letter, side in zip(letters, found.sides, strict=True):
        origin = side.task.forked_from
        forked = "" if origin is None else f", forked from {ids.get(origin, origin)}"
        render.print_line(f"  {letter}  {side.task.id} ({side.task.name}{forked})")
    _print_outcomes(found, letters)
    _print_steps(found, letters)
    _print_tool_calls(found, letters, ids)
    if found.parted_at_seq is None:
        render.print_line(f"Their journals are alike: {found.shared_prefix} calls.")
    else:
        shared = "call" if found.shared_prefix == 1 else "calls"
        render.print_line(
            f"Their journals share their first {found.shared_prefix} {shared} "
            f"and part at seq {found.parted_at_seq}."
        )


def _print_outcomes(found: Comparison, letters: list[str]) -> None:
    listing = Listing()
    listing.word_column("", whole=True)
    for letter in letters:
        listing.text_column(letter)
    rows: dict[str, list[RenderableType]] = {
        "status": [render.status_text(side.task) for side in found.sides],
        "result": [_result(side.task.result, side.task.error) for side in found.sides],
        "tokens in / out": [f"{side.tokens_in:,} / {side.tokens_out:,}" for side in found.sides],
        "cost": [
            render.dollars(side.cost) + (f" ({side.unpriced_calls} unpriced)" if side.unpriced_calls else "")
            for side in found.sides
        ],
        "wall time": [journal_duration(side.wall_seconds) for side in found.sides],
        "models": [plain(", ".join(side.models) or "-") for side in found.sides],
        "calls": [str(len(side.ops)) for side in found.sides],
    }
    for name, cells in rows.items():
        listing.add_row(name, *cells)
    listing.print(render.console)


def _result(result: object, error: str | None) -> Text:
    if error is not None:
        return plain(error, style="red")
    return plain(preview(result, chars=CELL_PREVIEW_CHARS) or "-")


def _print_steps(found: Comparison, letters: list[str]) -> None:
    if not found.steps:
        return
    listing = Listing(title="Steps")
    listing.word_column("#", whole=True)
    for letter in letters:
        listing.text_column(letter)
    listing.word_column("", whole=True)
    for row in found.steps:
        mark = "same" if row.same else "differs"
        listing.add_row(
            str(row.step), *(_step(step) for step in row.steps), Text(mark, style=_MARK_STYLES[mark])
        )
    listing.print(render.console)


def _step(step: Step | None) -> Text:
    if step is None:
        return Text("-")
    return plain(f"{step.name}: ") + Text(step.status, style=render.STEP_STYLES[step.status])


def _print_tool_calls(found: Comparison, letters: list[str], ids: dict[str, str]) -> None:
    if not found.tool_calls:
        render.print_line("No task made a tool call.")
        return
    listing = Listing(title="Tool calls (by step, and position in the step)")
    listing.word_column("step", whole=True)
    for letter in letters:
        listing.text_column(letter)
    listing.word_column("", whole=True)
    for row in found.tool_calls:
        mark = row.mark if row.mark != "only in" else "only in " + ", ".join(ids[i] for i in row.only_in)
        listing.add_row(
            f"{'-' if row.step is None else row.step}.{row.position}",
            *(_call(call) for call in row.calls),
            Text(mark, style=_MARK_STYLES[row.mark]),
        )
    listing.print(render.console)


def _call(op: Operation | None) -> Text:
    if op is None:
        return Text("-")
    shown = plain(f"{op.name} {preview(op.input, chars=CELL_PREVIEW_CHARS)} → ")
    if op.error is not None:
        return shown + plain(op.error, style="red")
    return shown + plain(preview(op.output, chars=CELL_PREVIEW_CHARS) or "-")

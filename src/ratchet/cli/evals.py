"""`ratchet eval`: recorded tasks run again with a new model, tool calls served from their journals.

The tasks are chosen with ``--where FIELD=VALUE``, the filters of `ratchet
tasks` spelled as fields (``--where status=failed --where label=team=ops``;
``--model`` here names the model to try, so the filters are not options of
their own). Each is run again in a store of its own held in memory; the
user's store is only read (docs/evals.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.text import Text

from ..errors import InputError
from ..records import TaskFilter
from ..runtime import Runtime
from ..runtime.evals import EvalReport, TaskEval, Verdict
from ..store import DEFAULT_STORE_URL
from ..views.task_filter import FilterText, parse_filter
from . import json_output, render
from .eval_html import eval_html
from .options import AllowCodeOption, ForceOpenOption, StoreOption
from .store_access import open_store_for, run_async
from .tables import Listing

__all__ = ["eval_command", "where_filter"]

T = TypeVar("T")

# The fields `--where` takes, as `ratchet tasks` names its options (without the dashes).
_REPEATABLE = {"status": "status", "waiting-on": "waiting_on", "label": "label"}
_SINGLE = {
    "name": "name",
    "agent": "agent",
    "model": "model",
    "parent": "parent",
    "id-prefix": "id_prefix",
    "search": "search",
    "since": "since",
    "until": "until",
    "min-cost": "min_cost",
    "max-cost": "max_cost",
}


def eval_command(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            metavar="PROVIDER:MODEL",
            help="The model to try (openai:gpt-4o, scripted:new.json).",
        ),
    ],
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            metavar="FIELD=VALUE",
            help="Only tasks that pass this filter of `ratchet tasks` (status=failed, agent=triage, "
            "label=team=ops, since=2h ...); repeat for all of several. Without a status: status=completed.",
        ),
    ] = None,
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            metavar="NAME|MODULE:FUNCTION",
            help="exact (default: the same tool calls and final answer), json-diff (the final answer's "
            "structure), or a function of your own: module:function or file.py:function.",
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", metavar="FILE", help="Also write the report as one HTML file (no other assets)."
        ),
    ] = None,
    fail_on_diff: Annotated[
        bool, typer.Option("--fail-on-diff", help="Exit 1 when any task differs (for CI); default: 0.")
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON instead of a table.")
    ] = False,
    allow_code: AllowCodeOption = None,
) -> None:
    """Run recorded tasks again with another model, tools answered from their journals; score each.

    Each task's workflow runs afresh with --model, in a store of its own held
    in memory: its model calls go to the new model, every tool call is
    answered from what the task recorded, and a call the recording does not
    have is not run (the task is a diff that names it). The store is only
    read. Exit 0 once the eval ran, whatever it found (1 with --fail-on-diff
    when a task differs), 2 on bad input.
    """
    chosen = where_filter(where or [])
    if html is not None and not html.parent.is_dir():
        raise InputError(f"--html {html}: there is no directory {html.parent} to write it in")
    report = run_async(_eval(store, model, chosen, scorer, allow_code or []))
    if html is not None:
        try:
            html.write_text(eval_html(report), encoding="utf-8")
        except OSError as error:
            raise InputError(f"--html {html}: cannot write it: {error.strerror or error}") from None
    if as_json:
        json_output.print_json(report.model_dump(mode="json"))
    else:
        print_report(report)
        if html is not None:
            render.print_line(f"The report is in {html}.")
    if fail_on_diff and report.totals.diffs:
        raise typer.Exit(1)


async def _eval(
    url: str, model: str, where: TaskFilter | None, scorer: str | None, allow_code: list[str]
) -> EvalReport:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store, allow_code=allow_code).evaluate(model, scorer=scorer, where=where)


def where_filter(given: list[str]) -> TaskFilter | None:
    """The `TaskFilter` of the ``--where FIELD=VALUE`` options (None: none given, the default applies).

    Raises:
        InputError: a value is not FIELD=VALUE, names no field, repeats one that is
            not repeatable, or is not a value its field takes.
    """
    if not given:
        return None
    repeated: dict[str, list[str]] = {field: [] for field in _REPEATABLE.values()}
    single: dict[str, str] = {}
    for text in given:
        field, equals, value = text.partition("=")
        field = field.strip().lower()
        if not equals or not field:
            raise InputError(f"--where {text!r}: write FIELD=VALUE, e.g. status=completed")
        if field in _REPEATABLE:
            repeated[_REPEATABLE[field]].append(value)
        elif field in _SINGLE:
            if _SINGLE[field] in single:
                raise InputError(f"--where {field}= is given twice; give it once")
            single[_SINGLE[field]] = value
        else:
            known = ", ".join([*_REPEATABLE, *_SINGLE])
            raise InputError(f"--where {text!r}: no field {field!r}; the fields are {known}")
    typed = FilterText(
        status=repeated["status"], waiting_on=repeated["waiting_on"], label=repeated["label"], **single
    )
    return parse_filter(typed, lambda field: f"--where {field.replace('_', '-')}")


# --------------------------------------------------------------------------- the table


def print_report(report: EvalReport) -> None:
    """Each task's verdict and what differs, its figures against the recording's, then the totals."""
    listing = Listing(f"eval of {report.model} (scorer: {report.scorer})")
    listing.id_column("task")
    listing.word_column("verdict", whole=True)
    listing.text_column("what differs")
    for header in ("tokens", "cost", "latency"):
        listing.word_column(header, justify="right")
    for task in report.tasks:
        listing.add_row(
            Text(task.task_id),
            _verdict(task),
            Text("; ".join(task.differences) or "-"),
            Text(_against(task.candidate.tokens, task.recorded.tokens, str)),
            Text(_against(task.candidate.cost, task.recorded.cost, render.dollars)),
            Text(_against(task.candidate.latency, task.recorded.latency, _seconds)),
        )
    listing.print(render.console)
    totals = report.totals
    render.print_line(
        f"{totals.matches} match, {totals.diffs} differ, of {totals.tasks} task(s). "
        f"New against recorded: tokens {_against(totals.candidate_tokens, totals.recorded_tokens, str)}, "
        f"cost {_against(totals.candidate_cost, totals.recorded_cost, render.dollars)}, "
        f"latency {_against(totals.candidate_latency, totals.recorded_latency, _seconds)}."
    )


def _verdict(task: TaskEval) -> Text:
    return Text(task.verdict.value, style="green" if task.verdict is Verdict.MATCH else "red")


def _against(new: T, recorded: T, shown: Callable[[T], str]) -> str:
    """``new / recorded``, each as `shown` writes it."""
    return f"{shown(new)} / {shown(recorded)}"


def _seconds(value: float) -> str:
    """A latency as people read it: ``12 ms``, ``3.40 s``."""
    return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.0f} ms"

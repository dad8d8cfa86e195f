"""`ratchet replay-check`: whether the code installed here still replays the stored tasks' journals.

It picks tasks as `ratchet tasks` does (its filters; by default those that
have not ended) and replays each one's journal against the code this
directory, installed packages and ``--allow-code`` give, with nothing run
live and nothing written (`Runtime.replay_check`; docs/changing-code.md).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from ..engine.replay import ReplayOutcome
from ..errors import InputError
from ..printable import plain
from ..records import TaskFilter
from ..runtime import Runtime
from ..runtime.replay_check import NOT_ENDED
from ..store import DEFAULT_STORE_URL
from ..trust.code import CodeTrust
from . import json_output, render
from .exits import EXIT_FAILED
from .filter_options import NO_FILTERS, FilterOptions, with_filter_options
from .options import AllowCodeOption, ForceOpenOption, JsonOption, StoreOption
from .resume import make_cwd_importable
from .store_access import open_store_for, run_async
from .tables import Listing

__all__ = ["outcome_json", "replay_check_command"]


@with_filter_options
def replay_check_command(
    tasks: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[TASK]...",
            help="The tasks to check, by id; or, instead, the filters of `ratchet tasks`.",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    filters: FilterOptions = NO_FILTERS,
    every: Annotated[
        bool,
        typer.Option("--all", help="Ended tasks too, when no --status or --waiting-on is given."),
    ] = False,
    allow_code: AllowCodeOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replay stored tasks' journals against the code installed here; say where any diverges.

    By default every task that has not ended is checked; the filters of
    `ratchet tasks` pick others. No model or tool is called and nothing is
    written. Exit code: 0 every task replays, 1 one diverges or cannot be
    checked (its code is refused or missing here), 2 bad input.
    """
    allowed = allow_code or []
    CodeTrust.here(allowed)  # a bad allowance is bad input now, before the store is opened
    where = filters.where()
    if tasks and filters.given():
        raise InputError(f"give task ids or filters ({filters.given()[0]}), not both")
    if not every and not where.statuses and not where.waiting_on:
        where = dataclasses.replace(where, statuses=NOT_ENDED)
    make_cwd_importable()
    outcomes = run_async(_check(store, where, tasks or None, allowed))
    if as_json:
        json_output.print_json(outcome_json(outcomes))
    else:
        _print_outcomes(outcomes)
    if not all(outcome.ok for outcome in outcomes):
        raise typer.Exit(EXIT_FAILED)


async def _check(
    url: str, where: TaskFilter, tasks: list[str] | None, allowed: list[str]
) -> list[ReplayOutcome]:
    async with open_store_for(url, create=False) as store, Runtime(store, allow_code=allowed) as rt:
        if tasks is not None:
            return await rt.replay_check(task_ids=tasks)
        return await rt.replay_check(where)


def _verdict(outcome: ReplayOutcome) -> str:
    if outcome.problem is not None:
        return "unchecked"
    return "replays" if outcome.divergence is None else "diverges"


def outcome_json(outcomes: list[ReplayOutcome]) -> dict[str, Any]:
    """The JSON document of ``--json``: a count of each verdict, then each task's outcome, in order."""
    verdicts = [_verdict(outcome) for outcome in outcomes]
    return {
        "ok": all(outcome.ok for outcome in outcomes),
        "checked": len(outcomes),
        **{verdict: verdicts.count(verdict) for verdict in ("replays", "diverges", "unchecked")},
        "tasks": [
            {
                "task_id": outcome.task_id,
                "verdict": verdict,
                "replayed": outcome.replayed,
                "divergence": None if outcome.divergence is None else dataclasses.asdict(outcome.divergence),
                "problem": outcome.problem,
            }
            for outcome, verdict in zip(outcomes, verdicts, strict=True)
        ],
    }


def _where(outcome: ReplayOutcome) -> str:
    differs = outcome.divergence
    return "" if differs is None else f"{differs.seq}: {differs.recorded} -> {differs.requested}"


def _print_outcomes(outcomes: list[ReplayOutcome]) -> None:
    if not outcomes:
        render.print_line("No tasks to check.")
        return
    listing = Listing()
    listing.id_column("task")
    listing.word_column("replayed", justify="right")
    listing.word_column("verdict", whole=True)
    listing.text_column("seq: recorded -> now")
    listing.text_column("fix, or the problem")
    for outcome in outcomes:
        differs = outcome.divergence
        listing.add_row(
            plain(outcome.task_id),
            str(outcome.replayed),
            _verdict(outcome),
            plain(_where(outcome)),
            plain(outcome.problem or (differs.fix if differs is not None else "")),
        )
    listing.print(render.console)
    document = outcome_json(outcomes)
    render.print_line(
        f"{document['checked']} checked: {document['replays']} replay, {document['diverges']} diverge, "
        f"{document['unchecked']} cannot be checked."
    )

"""`ratchet cancel|retry|delete` with the filters of `ratchet tasks`: a count first, then every task.

Without ``--yes`` a batch acts on nothing: it prints how many tasks match
and the first few (newest first, the order it acts in), exit 0; only when
both standard input and output are a terminal (and not ``--json``) does it
ask, and act on a "y". With ``--yes`` it does to each task, a page at a
time, what the command does to one (`Runtime.cancel_tasks` ...), and prints
how many it did and which it skipped, and why.

A TASK and filters together, or neither, is bad input (one line, exit 2);
so is a bad filter, in the words `ratchet tasks` uses.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import typer

from ..engine.batches import NEWEST_FIRST, BatchOutcome, SkippedTask, started_before
from ..errors import InputError, StoreNotFound
from ..records import TaskFilter, TaskRow
from ..runtime import Runtime
from . import json_output, render
from .filter_options import FilterOptions
from .store_access import open_store_for, run_async

__all__ = ["YesOption", "ask", "batch_filter", "print_skipped", "run_batch"]

YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Act without asking (with filters: on every task they match).")
]

SAMPLE = 5  # the tasks a dry run shows
SHOWN_SKIPPED = 10  # the skipped tasks listed (--json lists every one)


@dataclass(frozen=True)
class Verb:
    """A batch verb as people read it: ``cancel``, and what a task it was done to is: ``cancelled``."""

    name: str
    done: str


def batch_filter(task_id: str | None, filters: FilterOptions, *, verb: str) -> TaskFilter | None:
    """None when the command is given a TASK; the filter it is given instead, checked.

    Raises:
        InputError: both a TASK and filters, or neither; a filter is not one.
    """
    given = filters.given()
    if task_id is not None and given:
        raise InputError(
            f"give a TASK or filters ({given[0]} ...), not both; `ratchet {verb} TASK` acts on one task"
        )
    if task_id is None and not given:
        raise InputError(
            f"say which tasks to {verb}: a TASK, or the filters of `ratchet tasks` "
            f"(e.g. --status failed --agent triage --since 2h)"
        )
    return None if task_id is not None else filters.where()


def run_batch(
    verb: Verb,
    where: TaskFilter,
    *,
    store: str,
    yes: bool,
    as_json: bool,
    act: Callable[[Runtime], Awaitable[BatchOutcome]],
) -> None:
    """Count the tasks `where` keeps, or (with `yes`, or a "y") `act` on them; print what was done."""
    if not yes:
        matched, sample = run_async(_preview(store, where))
        if as_json:
            json_output.print_json({"action": verb.name, "matched": matched})
            return
        render.print_tasks(sample, store_url=store, where=where)
        if matched == 0:
            return
        if matched > len(sample):
            render.print_line(f"… and {matched - len(sample)} more")
        these = "this task" if matched == 1 else f"these {matched} tasks"
        answer = ask(f"{verb.name.capitalize()} {these}?")
        if answer is None:
            render.print_line(
                f"{matched} {'task matches' if matched == 1 else 'tasks match'}; nothing was {verb.done}. "
                f"Give --yes to {verb.name} {'it' if matched == 1 else 'them'}."
            )
            return
        if not answer:
            render.print_line(f"nothing was {verb.done}")
            return
    outcome = run_async(_act(store, verb.name, act))
    if as_json:
        json_output.print_json({"action": verb.name, **outcome.as_json()})
        return
    render.print_line(
        f"{verb.done} {outcome.done} of {outcome.matched} matching task{'' if outcome.matched == 1 else 's'}"
        f"; {len(outcome.skipped)} skipped"
    )
    print_skipped(outcome.skipped)


def ask(question: str) -> bool | None:
    """The answer to `question` when a person is at a terminal (both ends); None when nobody can answer."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    return typer.confirm(question)


def print_skipped(skipped: list[SkippedTask]) -> None:
    """The first tasks a batch skipped, each with why."""
    for one in skipped[:SHOWN_SKIPPED]:
        render.print_line(f"  skipped {one.task_id}: {one.reason}")
    if len(skipped) > SHOWN_SKIPPED:
        render.print_line(f"  … and {len(skipped) - SHOWN_SKIPPED} more skipped (--json lists every one)")


async def _preview(url: str, where: TaskFilter) -> tuple[int, list[TaskRow]]:
    bounded = started_before(where)
    try:
        async with open_store_for(url, create=False) as store, store.reading() as tx:
            return await tx.count_task_rows(bounded), await tx.list_task_rows(
                bounded, order=NEWEST_FIRST, limit=SAMPLE
            )
    except StoreNotFound:
        return 0, []  # nothing was ever stored there: none match


async def _act(url: str, name: str, act: Callable[[Runtime], Awaitable[BatchOutcome]]) -> BatchOutcome:
    try:
        async with open_store_for(url, create=False) as store:
            return await act(Runtime(store))
    except StoreNotFound:
        return BatchOutcome(name)  # nothing was ever stored there: none match

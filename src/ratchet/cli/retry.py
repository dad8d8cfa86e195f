"""`ratchet retry`: a new attempt of a failed or cancelled task, run here from where it stopped.

The attempt is a new task linked to the old one (``<id>-retry1``); it
replays what the old one did before the point it starts from, so nothing
that succeeded runs again, and runs live from there (docs/durability.md,
"Fork and retry"). With filters instead of a TASK (`ratchet.cli.batch`),
each task they match is retried from where it stopped, the new tasks queued
for workers: a batch runs nothing here.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..engine.run.runner import DEFAULT_LEASE_TTL
from ..errors import InputError
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL
from . import json_output, render
from .batch import Verb, YesOption, batch_filter, run_batch
from .filter_options import NO_FILTERS, FilterOptions, with_filter_options
from .options import (
    AllowCodeOption,
    CompatibleVersionsOption,
    ForceOpenOption,
    LeaseTtlOption,
    OptionalTaskArgument,
    StoreOption,
)
from .resume import resume_command
from .store_access import open_for_task, run_async

__all__ = ["retry_command"]

MAX_STEP = 1_000_000


@with_filter_options
def retry_command(
    task_id: OptionalTaskArgument = None,
    filters: FilterOptions = NO_FILTERS,
    from_step: Annotated[
        int | None,
        typer.Option(
            "--from-step",
            min=1,
            max=MAX_STEP,
            metavar="N",
            help="Start from the beginning of step N (from 1; default: the step it failed in).",
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    queue: Annotated[
        bool,
        typer.Option("--queue", help="Only make the new task, for a running `ratchet worker` to run."),
    ] = False,
    lease_ttl: LeaseTtlOption = DEFAULT_LEASE_TTL,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="End with one JSON line: the new task's id, status and outcome (or a batch's)."
        ),
    ] = False,
    allow_code: AllowCodeOption = None,
    compatible_versions: CompatibleVersionsOption = False,
    yes: YesOption = False,
) -> None:
    """Retry a failed or cancelled task: a new task replays what succeeded and runs on from there.

    An agent task starts again at the beginning of the step it failed in
    (or of step N with --from-step); a workflow at the call that failed for
    good; a cancelled task where it was stopped. The new task is run here,
    as `ratchet resume` runs one, with the same exit codes; with --queue it
    is only made, for a worker.

    With the filters of `ratchet tasks` instead of TASK, every failed or
    cancelled task they match, each from where it stopped and queued for the
    workers: without --yes, only how many (and the first few).
    """
    where = batch_filter(task_id, filters, verb="retry")
    if where is not None:
        if from_step is not None:
            raise InputError("--from-step is for one TASK; a batch retries each task from where it stopped")
        run_batch(
            Verb("retry", "retried"),
            where,
            store=store,
            yes=yes,
            as_json=as_json,
            act=lambda runtime: runtime.retry_tasks(where),
        )
        return
    assert task_id is not None
    new_id = run_async(_retry(store, task_id, from_step, queue=queue))
    if queue:
        if as_json:
            json_output.print_json({"task_id": new_id, "retry_of": task_id})
            return
        render.print_line(f"task {task_id} will be retried as new task {new_id}")
        render.print_line(
            f"Run it with `{render.command('resume', new_id, store_url=store)}`, "
            "or a running `ratchet worker` picks it up."
        )
        return
    if not as_json:
        render.print_line(f"retrying task {task_id} as new task {new_id}")
    resume_command(
        new_id,
        store=store,
        force_open=force_open,
        lease_ttl=lease_ttl,
        as_json=as_json,
        allow_code=allow_code,
        compatible_versions=compatible_versions,
    )


async def _retry(url: str, task_id: str, from_step: int | None, *, queue: bool) -> str:
    async with open_for_task(url, task_id) as store:
        return await Runtime(store).retry(task_id, from_step=from_step, queue=queue)

"""`ratchet resolve`, `gc` and `migrate`: change what the store holds, run nothing (`fork`: cli/fork.py).

Each prints what it did and the command that carries on from there. `gc
--retain` deletes the tasks a retention expires (`ratchet.engine.retention`)
only with ``--yes`` (or a "y" at a terminal); without, it counts them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..engine.batches import BatchOutcome
from ..engine.retention import Retention, RetentionRule, count_expired, delete_expired
from ..errors import InputError
from ..policy import parse_duration
from ..printable import printable_json
from ..records import Operation, TaskStatus
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL, redact_url
from . import json_output, render
from .batch import YesOption, ask, print_skipped
from .options import MAX_COUNT, ForceOpenOption, JsonOption, RetainOption, StoreOption, TaskArgument
from .store_access import open_for_task, open_store_for, run_async

__all__ = ["gc_command", "migrate_command", "resolve_command"]

_NOT_GIVEN: Any = object()


# --------------------------------------------------------------------------- resolve


def resolve_command(
    task_id: TaskArgument,
    op: Annotated[
        int,
        typer.Option(
            "--op",
            min=0,
            max=MAX_COUNT,
            metavar="SEQ",
            help="The in-doubt operation (`ratchet show TASK` lists them).",
        ),
    ],
    retry: Annotated[
        bool,
        typer.Option("--retry", help="It did not happen: run it again, with the same idempotency key."),
    ] = False,
    skip: Annotated[bool, typer.Option("--skip", help="It happened: go on, with no result.")] = False,
    result: Annotated[
        str | None,
        typer.Option("--result", metavar="JSON", help="It happened: go on, with this JSON as its result."),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Settle a tool call that was in flight when its worker stopped (a task waiting(in_doubt))."""
    if sum((retry, skip, result is not None)) != 1:
        raise InputError("choose exactly one of --retry, --skip or --result JSON")
    given = _NOT_GIVEN if result is None else _parse_json(result)
    settled = run_async(_resolve(store, task_id, op, retry=retry, skip=skip, result=given))
    if retry:
        how = f"it runs again (attempt {settled.attempt + 1}, idempotency key {settled.idempotency_key})"
    elif skip:
        how = "treated as done, with no result"
    else:
        how = f"treated as done, with the result {printable_json(given)}"
    render.print_line(f"operation {op} ({settled.name}) of task {task_id}: {how}.")
    render.print_line(
        f"Continue the task with `{render.command('resume', task_id, store_url=store)}`, "
        "or a running `ratchet worker` picks it up."
    )


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"--result is not JSON ({error}); quote it for the shell, e.g. --result '{{\"id\": 42}}'"
        ) from None


async def _resolve(url: str, task_id: str, seq: int, *, retry: bool, skip: bool, result: Any) -> Operation:
    """Settle the operation; return it as it was while in doubt."""
    async with open_for_task(url, task_id) as store:
        in_doubt = await store.get_op(task_id, seq)
        options: dict[str, Any] = {"retry": retry, "skip": skip}
        if result is not _NOT_GIVEN:
            options["result"] = result
        await Runtime(store).resolve(task_id, seq, **options)
        assert in_doubt is not None  # resolve refuses an operation that does not exist
        return in_doubt


# --------------------------------------------------------------------------- gc


def gc_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep", min=1, max=MAX_COUNT, metavar="N", help="Keep the newest N checkpoints of each task."
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            help="Delete checkpoints older than this: 30m, 12h, 7d.",
        ),
    ] = None,
    retain: RetainOption = None,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete old checkpoints (each task's newest is always kept), or the tasks kept past --retain.

    --retain deletes only with --yes (or a "y" at a terminal); without, it
    says how many tasks it would delete. A worker given --retain (or
    [worker.retain] in ratchet.toml) does the same every few minutes.
    """
    if keep is None and older_than is None and not retain:
        raise InputError(
            "say what to delete: checkpoints with --keep N or --older-than DURATION (e.g. 7d), "
            "tasks with --retain STATUS=AGE (e.g. completed=30d)"
        )
    try:
        seconds = None if older_than is None else parse_duration(older_than)
    except InputError as error:
        raise InputError(f"--older-than: {error.message}") from None
    retention = Retention.parse(retain or ())
    shown: dict[str, Any] = {}
    if keep is not None or older_than is not None:
        deleted = run_async(_gc(store, keep=keep, older_than=seconds))
        shown = {"deleted": deleted, "keep": keep, "older_than_seconds": seconds}
        if not as_json:
            rules = []
            if keep is not None:
                rules.append(f"kept the newest {keep} of each task")
            if older_than is not None:
                rules.append(f"dropped those older than {older_than.strip()}")
            plural = "" if deleted == 1 else "s"
            render.print_line(
                f"deleted {deleted} checkpoint{plural} ({' and '.join(rules)}; each task's newest stays)"
            )
    if retention:
        shown["retained"] = _retain(store, retention, yes=yes, as_json=as_json)
    if as_json:
        json_output.print_json(shown)


def _retain(url: str, retention: Retention, *, yes: bool, as_json: bool) -> list[dict[str, Any]]:
    """Count the tasks `retention` expires, or delete them (--yes, or a "y"); say it; return it as JSON."""
    if not yes:
        counts = run_async(_count_expired(url, retention))
        found = sum(counts.values())
        each = ", ".join(f"{rule}: {counts[rule.status]}" for rule in retention.rules)
        counted = [{"rule": str(rule), "matched": counts[rule.status]} for rule in retention.rules]
        if as_json:
            return counted
        these = "this task" if found == 1 else f"these {found} tasks"
        answer = ask(f"Delete {these} ({each})?") if found else None
        if answer is None:
            them = "it" if found == 1 else "them"
            render.print_line(
                f"{found} task{'' if found == 1 else 's'} kept past the retention ({each}); "
                + (f"give --yes to delete {them}." if found else "nothing to delete.")
            )
            return counted
        if not answer:
            render.print_line("nothing was deleted")
            return counted
    done = run_async(_delete_expired(url, retention))
    if not as_json:
        for rule, outcome in done.items():
            render.print_line(
                f"deleted {outcome.done} task{'' if outcome.done == 1 else 's'} kept past {rule}; "
                f"{len(outcome.skipped)} skipped"
            )
            print_skipped(outcome.skipped)
    return [{"rule": str(rule), **outcome.as_json()} for rule, outcome in done.items()]


async def _gc(url: str, *, keep: int | None, older_than: float | None) -> int:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store).gc(keep=keep, older_than=older_than)


async def _count_expired(url: str, retention: Retention) -> dict[TaskStatus, int]:
    async with open_store_for(url, create=False) as store:
        return await count_expired(store, retention)


async def _delete_expired(url: str, retention: Retention) -> dict[RetentionRule, BatchOutcome]:
    async with open_store_for(url, create=False) as store:
        return await delete_expired(store, retention)


# --------------------------------------------------------------------------- migrate


def migrate_command(store: StoreOption = DEFAULT_STORE_URL, force_open: ForceOpenOption = False) -> None:
    """Create the database if needed and bring its schema to this version of Ratchet."""
    schema_version = run_async(_migrate(store))
    render.print_line(f"{redact_url(store)}: schema version {schema_version}")


async def _migrate(url: str) -> int:
    async with open_store_for(url, create=True) as store:  # opening migrates
        return await store.schema_version()

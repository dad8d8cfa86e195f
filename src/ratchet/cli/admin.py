"""`ratchet resolve`, `fork`, `gc` and `migrate`: change what the store holds, run nothing.

Each prints what it did and the command that carries on from there.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from pydantic import JsonValue

from ..errors import CheckpointNotFound, InputError
from ..json_text import read_json_text
from ..policy import parse_duration
from ..printable import printable_json
from ..records import Operation
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL, redact_url
from . import json_output, render
from .options import MAX_COUNT, ForceOpenOption, JsonOption, StoreOption, TaskArgument
from .store_access import open_for_task, open_store_for, run_async

__all__ = ["fork_command", "gc_command", "migrate_command", "resolve_command"]

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


# --------------------------------------------------------------------------- fork


def fork_command(
    task_id: TaskArgument,
    checkpoint: Annotated[
        int,
        typer.Option(
            "--checkpoint", min=1, max=MAX_COUNT, metavar="N", help="The checkpoint to start from (from 1)."
        ),
    ],
    inputs: Annotated[
        str | None,
        typer.Option(
            "--inputs",
            metavar="JSON",
            help="Inputs to change in the new task, as a JSON object; the others stay as they were.",
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Start a new task from one of a task's checkpoints; the original is left as it is."""
    changed = _changed_inputs(inputs)
    new_id = run_async(_fork(store, task_id, checkpoint, changed))
    if as_json:
        forked: dict[str, Any] = {"task_id": new_id, "forked_from": task_id, "checkpoint": checkpoint}
        if changed:
            forked["changed_inputs"] = sorted(changed)
        json_output.print_json(forked)
        return
    shown = f" with {', '.join(sorted(changed))} changed" if changed else ""
    render.print_line(f"forked task {task_id} at checkpoint {checkpoint}{shown}: new task {new_id}")
    render.print_line(
        f"Run it with `{render.command('resume', new_id, store_url=store)}`, "
        "or a running `ratchet worker` picks it up."
    )


def _changed_inputs(text: str | None) -> dict[str, JsonValue] | None:
    """``--inputs`` read as the API reads ``inputs_json``: one JSON object, every integer exact."""
    if text is None:
        return None
    value = read_json_text(text, "--inputs")
    if not isinstance(value, dict):
        raise InputError('--inputs must be a JSON object, e.g. \'{"city": "Oslo"}\'')
    return value


async def _fork(url: str, task_id: str, checkpoint: int, inputs: dict[str, JsonValue] | None) -> str:
    async with open_for_task(url, task_id) as store:
        await store.get_task(task_id)  # an unknown task is named as such, not as a checkpoint
        try:
            return await Runtime(store).fork(task_id, checkpoint, inputs=inputs)
        except CheckpointNotFound:
            numbers = [saved.number for saved in await store.list_checkpoints(task_id)]
            raise CheckpointNotFound(
                f"task {task_id} has no checkpoint {checkpoint}; {_which(numbers)}"
            ) from None


def _which(numbers: list[int]) -> str:
    if not numbers:
        return "it has none yet (one is written when a step ends)"
    if len(numbers) <= 10:
        return "its checkpoints are " + ", ".join(map(str, numbers))
    return f"its checkpoints are {numbers[0]} to {numbers[-1]} ({len(numbers)} of them)"


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
    as_json: JsonOption = False,
) -> None:
    """Delete old checkpoints (each task's newest is always kept)."""
    if keep is None and older_than is None:
        raise InputError(
            "say which checkpoints to delete: --keep N, --older-than DURATION (e.g. 7d), or both"
        )
    try:
        seconds = None if older_than is None else parse_duration(older_than)
    except InputError as error:
        raise InputError(f"--older-than: {error.message}") from None
    deleted = run_async(_gc(store, keep=keep, older_than=seconds))
    if as_json:
        json_output.print_json({"deleted": deleted, "keep": keep, "older_than_seconds": seconds})
        return
    rules = []
    if keep is not None:
        rules.append(f"kept the newest {keep} of each task")
    if older_than is not None:
        rules.append(f"dropped those older than {older_than.strip()}")
    plural = "" if deleted == 1 else "s"
    render.print_line(
        f"deleted {deleted} checkpoint{plural} ({' and '.join(rules)}; each task's newest stays)"
    )


async def _gc(url: str, *, keep: int | None, older_than: float | None) -> int:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store).gc(keep=keep, older_than=older_than)


# --------------------------------------------------------------------------- migrate


def migrate_command(store: StoreOption = DEFAULT_STORE_URL, force_open: ForceOpenOption = False) -> None:
    """Create the database if needed and bring its schema to this version of Ratchet."""
    schema_version = run_async(_migrate(store))
    render.print_line(f"{redact_url(store)}: schema version {schema_version}")


async def _migrate(url: str) -> int:
    async with open_store_for(url, create=True) as store:  # opening migrates
        return await store.schema_version()

"""`ratchet fork`: a new task from an old one's journal, at a checkpoint or a step, with what-if overrides.

The overrides (``--model``, ``--instructions``, ``--set-input``,
``--tool-result``) are read here, each to one line of bad input (exit 2)
before anything is stored; `Runtime.fork` checks them against the task
(`ratchet.runtime.what_if`) and journals them on the new task.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from pydantic import JsonValue

from ..errors import CheckpointNotFound, InputError
from ..json_text import read_json_object, read_json_text
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL
from . import json_output, render
from .options import MAX_COUNT, ForceOpenOption, JsonOption, StoreOption, TaskArgument
from .store_access import open_for_task, run_async

__all__ = ["fork_command"]


def fork_command(
    task_id: TaskArgument,
    checkpoint: Annotated[
        int | None,
        typer.Option(
            "--checkpoint", min=1, max=MAX_COUNT, metavar="N", help="The checkpoint to start from (from 1)."
        ),
    ] = None,
    step: Annotated[
        int | None,
        typer.Option(
            "--step",
            min=1,
            max=MAX_COUNT,
            metavar="N",
            help="Start at step N (from 1): the journal before its first call is kept, as retry --from-step.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="MODEL", help="The model (provider:name) of each call the new task makes live."
        ),
    ] = None,
    instructions: Annotated[
        str | None,
        typer.Option(
            "--instructions", metavar="TEXT", help="The new task's instruction (what the agent plans on)."
        ),
    ] = None,
    inputs: Annotated[
        str | None,
        typer.Option(
            "--inputs",
            metavar="JSON",
            help="Inputs to change in the new task, as a JSON object; the others stay as they were.",
        ),
    ] = None,
    set_inputs: Annotated[
        list[str] | None,
        typer.Option(
            "--set-input",
            metavar="KEY=VALUE",
            help="Change one input (repeatable); VALUE is read as JSON when it is JSON, else as text.",
        ),
    ] = None,
    tool_results: Annotated[
        list[str] | None,
        typer.Option(
            "--tool-result",
            metavar="SEQ=JSON",
            help="The result the journaled tool call SEQ gives in the new task (repeatable).",
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Start a new task from one of a task's checkpoints or steps; the original is left as it is.

    With --model, --instructions, --set-input or --tool-result it is a
    what-if fork: the new task replays the kept journal (with the tool
    results given) and runs live from there as told; its `task_forked`
    event, `ratchet show` and `ratchet journal` say what was changed.
    """
    if (checkpoint is None) == (step is None):
        both = checkpoint is not None
        raise InputError(
            "fork from one point: give --checkpoint N or --step N" + (", not both" if both else "")
        )
    changed = _changed_inputs(inputs, set_inputs or [])
    results = _tool_results(tool_results or [])
    options: dict[str, Any] = {
        "step": step,
        "inputs": changed,
        "model": model,
        "instructions": instructions,
        "tool_results": results,
    }
    new_id = run_async(_fork(store, task_id, checkpoint, options))
    where = f"checkpoint {checkpoint}" if checkpoint is not None else f"step {step}"
    if as_json:
        forked: dict[str, Any] = {"task_id": new_id, "forked_from": task_id}
        forked["checkpoint" if checkpoint is not None else "step"] = checkpoint or step
        if changed:
            forked["changed_inputs"] = sorted(changed)
        if model is not None:
            forked["model"] = model
        if instructions is not None:
            forked["instructions"] = instructions
        if results:
            forked["tool_results"] = sorted(results)
        json_output.print_json(forked)
        return
    shown = [f"{', '.join(sorted(changed))} changed"] if changed else []
    if model is not None:
        shown.append(f"the model {model}")
    if instructions is not None:
        shown.append("new instructions")
    if results:
        numbers = ", ".join(str(seq) for seq in sorted(results))
        plural = "s" if len(results) > 1 else ""
        shown.append(f"the result{plural} of operation{plural} {numbers} overridden")
    said = f" with {'; '.join(shown)}" if shown else ""
    render.print_line(f"forked task {task_id} at {where}{said}: new task {new_id}")
    render.print_line(
        f"Run it with `{render.command('resume', new_id, store_url=store)}`, "
        "or a running `ratchet worker` picks it up."
    )


def _changed_inputs(text: str | None, pairs: list[str]) -> dict[str, JsonValue] | None:
    """``--inputs`` read as the API reads ``inputs_json`` (one JSON object, every integer exact),
    then each ``--set-input KEY=VALUE`` over it."""
    changed = {} if text is None else read_json_object(text, "--inputs", """'{"city": "Oslo"}'""")
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise InputError(f"--set-input {pair!r}: give KEY=VALUE, e.g. --set-input city=Oslo")
        changed[key] = _json_or_text(value)
    return changed or None


def _json_or_text(value: str) -> JsonValue:
    """VALUE as JSON when it reads as JSON (``3``, ``true``, ``["a"]``), else the text itself."""
    try:
        return read_json_text(value, "the value")
    except InputError:
        return value


def _tool_results(pairs: list[str]) -> dict[int, JsonValue]:
    """Each ``--tool-result SEQ=JSON``, by seq."""
    results: dict[int, JsonValue] = {}
    for pair in pairs:
        seq_text, equals, value = pair.partition("=")
        seq_text = seq_text.strip()
        if not equals or not seq_text.isdigit() or not seq_text.isascii():
            raise InputError(
                f"--tool-result {pair!r}: give SEQ=JSON, the seq of a tool call "
                """(`ratchet journal TASK` lists them), e.g. --tool-result '4={"status": "ok"}'"""
            )
        seq = int(seq_text)
        if seq in results:
            raise InputError(f"--tool-result {seq} is given twice; give each call's result once")
        results[seq] = read_json_text(value, f"--tool-result {seq}'s result")
    return results


async def _fork(url: str, task_id: str, checkpoint: int | None, options: dict[str, Any]) -> str:
    async with open_for_task(url, task_id) as store:
        await store.get_task(task_id)  # an unknown task is named as such, not as a checkpoint
        try:
            return await Runtime(store).fork(task_id, checkpoint, **options)
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

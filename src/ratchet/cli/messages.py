"""`ratchet send`: a message to a running task, received by its workflow's ``ctx.receive(NAME)``.

The message is kept in the task's durable inbox until received; a task
waiting for one is queued, and a running `ratchet worker` (or `ratchet
resume TASK`) carries it on.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..errors import InputError
from ..printable import printable_json
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL
from . import render
from .options import ForceOpenOption, StoreOption, TaskArgument
from .store_access import open_for_task, run_async

__all__ = ["send_command"]


def send_command(
    task_id: TaskArgument,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The message's name, as the task receives it.")],
    payload: Annotated[
        str | None,
        typer.Argument(metavar="JSON", help="The message (any JSON value, e.g. '\"ship it\"'); none: null."),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Send a message to a task (its workflow's ctx.receive NAME, or an agent's `note`)."""
    value = None if payload is None else _json(payload)
    sent = run_async(_send(store, task_id, name, value))
    render.print_line(f"sent {name!r} #{sent} to task {task_id}: {printable_json(value)}")


async def _send(url: str, task_id: str, name: str, payload: Any) -> int:
    async with open_for_task(url, task_id) as store:
        return (await Runtime(store).send(task_id, name, payload)).seq


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"the message is not JSON ({error}); quote it for the shell, e.g. '\"ship it\"' or '{{\"n\": 1}}'"
        ) from None

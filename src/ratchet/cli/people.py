"""`ratchet approve`, `ratchet deny` and `ratchet answer`: a person settles what a task waits for.

Each writes the decision durably and queues the task; a running `ratchet
worker` (or `ratchet resume TASK`) then carries it on. Arguments edited with
``approve --edit-args`` are checked against the tool's before anything is
written; where the tool's code does not load here, the call checks them when
it runs, and this says so.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..engine.people import check_edited_arguments
from ..errors import InputError
from ..printable import printable_json
from ..records import Approval
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL
from . import render
from .options import ForceOpenOption, StoreOption, TaskArgument
from .resume import make_cwd_importable
from .store_access import open_for_task, run_async

__all__ = ["answer_command", "approve_command", "deny_command"]


def approve_command(
    task_id: TaskArgument,
    edit_args: Annotated[
        str | None,
        typer.Option(
            "--edit-args",
            metavar="JSON",
            help="Run the call with these arguments (a JSON object) instead of the model's.",
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Approve the tool call a task waits for (waiting(approval)); it then runs.

    With --edit-args, the arguments must fit the tool's (checked here when its
    code loads here, else when the call runs); if they do not, nothing changes.
    """
    edited = None if edit_args is None else _json_object(edit_args)
    if edited is not None:
        make_cwd_importable()  # the task's workflow may be a module of this directory, as for resume
    approval, unchecked = run_async(_approve(store, task_id, edited))
    shown = printable_json(edited if edited is not None else approval.arguments)
    render.print_line(f"approved {approval.tool} {shown} (operation {approval.seq}) of task {task_id}.")
    if unchecked is not None:
        render.print_line(
            f"Its arguments could not be checked here ({unchecked}); the call checks them when it runs, "
            "and fails without running if they do not fit."
        )
    _say_how_to_continue(task_id, store)


def deny_command(
    task_id: TaskArgument,
    reason: Annotated[
        str,
        typer.Option("--reason", metavar="TEXT", help="Why; the agent is told, so it can adapt."),
    ],
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Deny the tool call a task waits for; the call does not run and the agent is told why."""
    approval = run_async(_settle(store, task_id, lambda rt: rt.deny(task_id, reason)))
    render.print_line(f"denied {approval.tool} (operation {approval.seq}) of task {task_id}: {reason}")
    _say_how_to_continue(task_id, store)


def answer_command(
    task_id: TaskArgument,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The answer to the task's question.")],
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Answer the question a task waits on (waiting(input)); it goes on with the answer."""
    run_async(_answer(store, task_id, text))
    render.print_line(f"answered the question of task {task_id}.")
    _say_how_to_continue(task_id, store)


async def _approve(url: str, task_id: str, edited: dict[str, Any] | None) -> tuple[Approval, str | None]:
    """Approve; return the approval as it was shown, and why its edited arguments went unchecked."""
    async with open_for_task(url, task_id) as store:
        runtime = Runtime(store)
        with runtime.trust.enforced():  # checking the edits loads the task's code: only code it may load
            unchecked = None if edited is None else await check_edited_arguments(store, task_id, edited)
        pending = await store.list_approvals(task_id, pending_only=True)
        await runtime.approve(task_id, edit_args=edited)
        return pending[0], unchecked  # the one decided (the decision succeeded, so there was one)


async def _settle(url: str, task_id: str, decide: Any) -> Any:
    """Make the decision; return the approval as it was shown (tool, arguments, seq)."""
    async with open_for_task(url, task_id) as store:
        pending = await store.list_approvals(task_id, pending_only=True)
        await decide(Runtime(store))
        return pending[0]  # the one decided (the decision succeeded, so there was one)


async def _answer(url: str, task_id: str, text: str) -> None:
    async with open_for_task(url, task_id) as store:
        await Runtime(store).answer(task_id, text)


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"--edit-args is not JSON ({error}); quote it for the shell, "
            f'e.g. --edit-args \'{{"to": "ops@example.com"}}\''
        ) from None
    if not isinstance(value, dict):
        raise InputError(
            '--edit-args must be a JSON object of the tool\'s arguments, e.g. \'{"to": "ops@example.com"}\''
        )
    return value


def _say_how_to_continue(task_id: str, store_url: str) -> None:
    render.print_line(
        f"Continue the task with `{render.command('resume', task_id, store_url=store_url)}`, "
        "or a running `ratchet worker` picks it up."
    )

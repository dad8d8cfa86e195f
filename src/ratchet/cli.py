"""The `ratchet` command line (Typer + Rich).

Every command takes ``--store URL`` (or ``RATCHET_STORE``). Commands that only
read open the store with ``create=False``, so looking never creates a database.
Bad input of any kind ends in one line on stderr, ``error: <what to do>``, and
exit code 2 (`main` is the one place that turns errors into that line).

This module builds the app, holds the read-only commands (tasks, show, events,
migrate) and registers the others: `ratchet.cli_run` (resume, worker, the
commands that run tasks here), `ratchet.cli_admin` (resolve, fork, gc) and
`ratchet.cli_people` (approve, deny, answer).

To add a command: write an ``async def`` that does the work with
`open_store_for`, and a Typer function that parses options and calls
`run_async` on it; register it below. Shared plumbing is in
`ratchet.cli_common`, rendering in `ratchet.cli_render`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, cast

import typer

from . import cli_admin, cli_agent, cli_people, cli_run, cli_submit
from . import cli_render as render
from ._distribution import DISTRIBUTION
from .cli_chat import chat_command, sessions_command
from .cli_common import (
    JsonOption,
    StoreOption,
    TaskArgument,
    in_doubt_ops,
    open_for_task,
    open_question,
    open_store_for,
    pending_approvals,
    run_async,
)
from .demo.command import demo_command
from .errors import InputError, StoreError, StoreNotFound
from .model import Event, Task, TaskStatus
from .store import DEFAULT_STORE_URL, redact_url
from .store.base import events_topic

__all__ = ["app", "main"]

# The longest wait for news when nothing is heard; SQLite looks every 0.2 s anyway (the store's poll).
FOLLOW_IDLE_SECONDS = 30.0
SHOW_EVENT_COUNT = 10

app = typer.Typer(
    name="ratchet",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# --------------------------------------------------------------------------- the root command


def _ratchet_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ratchet {_ratchet_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Ratchet: a durable runtime for LLM agents. Progress only moves forward."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


def parse_status(text: str) -> TaskStatus:
    """Return the task status `text` names.

    Raises:
        InputError: `text` names no status.
    """
    try:
        return TaskStatus(text.strip().lower())
    except ValueError:
        names = ", ".join(status.value for status in TaskStatus)
        raise InputError(f"unknown status {text!r}; use one of {names}") from None


# --------------------------------------------------------------------------- tasks


@app.command("tasks")
def tasks_command(
    store: StoreOption = DEFAULT_STORE_URL,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            help="Only tasks with this status: queued, running, waiting, completed, failed "
            "or cancelled.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List tasks, oldest first."""
    wanted = parse_status(status) if status is not None else None
    tasks = run_async(_list_tasks(store, wanted))
    if as_json:
        render.print_json([task.model_dump(mode="json") for task in tasks])
    else:
        render.print_tasks(tasks, store_url=store, status=wanted)


async def _list_tasks(url: str, status: TaskStatus | None) -> list[Task]:
    try:
        async with open_store_for(url, create=False) as store:
            return await store.list_tasks(status)
    except StoreNotFound:
        return []  # nothing was ever stored there: an empty listing, not an error


# --------------------------------------------------------------------------- show


@app.command("show")
def show_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    as_json: JsonOption = False,
) -> None:
    """Show one task: its status, steps, what it waits on and its latest events."""
    view = run_async(_load_task_view(store, task_id))
    if as_json:
        render.print_json(view.to_json())
    else:
        render.print_task_view(view, store_url=store)


async def _load_task_view(url: str, task_id: str) -> render.TaskView:
    async with open_for_task(url, task_id) as store, store.reading() as tx:
        task = await tx.get_task(task_id)
        return render.TaskView(
            task=task,
            steps=await tx.list_steps(task_id),
            pending_approvals=await pending_approvals(tx, task),
            question=await open_question(tx, task),
            in_doubt=await in_doubt_ops(tx, task),
            events=await tx.last_events(task_id, SHOW_EVENT_COUNT),
        )


# --------------------------------------------------------------------------- events


@app.command("events")
def events_command(
    task_id: TaskArgument,
    store: StoreOption = DEFAULT_STORE_URL,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing new events until the task ends."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print a task's events, oldest first (one JSON object per line with --json)."""
    printer = render.print_event_json if as_json else render.print_event
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends following; not an error
        run_async(_print_events(store, task_id, follow=follow, printer=printer))


async def _print_events(
    url: str, task_id: str, *, follow: bool, printer: render.EventPrinter
) -> None:
    async with open_for_task(url, task_id) as store, store.changes(events_topic(task_id)) as feed:
        last_seq = 0
        while True:
            # One read for both, so a task seen ended has all its events seen too
            # (a status change and its event commit together).
            async with store.reading() as tx:
                task = await tx.get_task(task_id)
                events: list[Event] = await tx.list_events(task_id, after_seq=last_seq)
            for event in events:
                printer(event)
            if events:
                last_seq = events[-1].seq
                render.flush()
            if not follow or task.status.is_terminal:
                return
            # PostgreSQL wakes us on each new event (NOTIFY); SQLite looks again after a short poll.
            await feed.wait(FOLLOW_IDLE_SECONDS)


# --------------------------------------------------------------------------- migrate


@app.command("migrate")
def migrate_command(store: StoreOption = DEFAULT_STORE_URL) -> None:
    """Create the database if needed and bring its schema to this version of Ratchet."""
    schema_version = run_async(_migrate(store))
    render.console.print(f"{redact_url(store)}: schema version {schema_version}", highlight=False)


async def _migrate(url: str) -> int:
    async with open_store_for(url, create=True) as store:  # opening migrates
        return await store.schema_version()


# --------------------------------------------------------------------------- the others

app.command("run")(cli_agent.run_command)
app.command("cancel")(cli_agent.cancel_command)
app.command("resume")(cli_run.resume_command)
app.command("worker")(cli_run.worker_command)
app.command("submit")(cli_submit.submit_command)
app.command("schedules")(cli_submit.schedules_command)
app.command("resolve")(cli_admin.resolve_command)
app.command("approve")(cli_people.approve_command)
app.command("deny")(cli_people.deny_command)
app.command("answer")(cli_people.answer_command)
app.command("fork")(cli_admin.fork_command)
app.command("gc")(cli_admin.gc_command)
app.command("demo")(demo_command)
app.command("chat")(chat_command)
app.command("sessions")(sessions_command)


# --------------------------------------------------------------------------- entry point


def _fail(message: str) -> int:
    one_line = " ".join(message.split())
    print(f"error: {one_line}", file=sys.stderr)
    return 2


# Newer Typer runs on its own copy of click, older Typer on click itself; either
# way Typer's BadParameter derives from that click's UsageError and ClickException.
_UsageError = cast("type[Exception]", typer.BadParameter.__mro__[1])
_ClickException = cast("type[Exception]", typer.BadParameter.__mro__[2])


def _usage_message(exc: Any) -> str:
    hint = f"; see `{exc.ctx.command_path} --help`" if exc.ctx else ""
    return f"{exc.format_message().rstrip('.')}{hint}"


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the command's code (docs/cli.md lists them).

    0 is success, 2 bad input (one ``error:`` line on stderr), 130 Ctrl-C;
    `ratchet resume` adds 1 (the task failed), 3 and 4 (it waits).
    """
    command = typer.main.get_command(app)
    try:
        outcome = command.main(argv, prog_name="ratchet", standalone_mode=False)
    except _UsageError as exc:
        outcome = _fail(_usage_message(exc))
    except _ClickException as exc:
        outcome = _fail(cast(Any, exc).format_message())
    except typer.Abort:
        outcome = 130
    except (InputError, StoreError) as exc:
        outcome = _fail(exc.message)
    sys.exit(outcome if isinstance(outcome, int) else 0)


if __name__ == "__main__":
    main()

"""The `ratchet` application: every command registered in one place, and the one exit path.

`run_command` is the only place that turns an error into an exit code: bad input of
any kind (a usage error, an `InputError`, a `StoreError`) ends in one line on
stderr, ``error: <what to do>``, and exit code 2; Ctrl-C is 130 (0 for `ratchet
worker`, see `ratchet.cli.interrupts`). The commands that run a task (`run`,
`resume`) choose their own codes (`ratchet.cli.exits`). `ratchet.cli.main`, the
program, calls it once it has made Ctrl-C its own.

To add a command: write it in the module of its family (or a new one), as a
Typer function that parses its options and calls `run_async` on an ``async
def`` that does the work; register it in `COMMANDS` below (a group of
subcommands in `GROUPS`), and add its name to the list the tests pin
(tests/cli/test_cli_commands.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from .._distribution import DISTRIBUTION
from ..errors import InputError, StoreError
from ..limits import utf8_problem
from ..printable import printable
from . import (
    admin,
    chat,
    delete,
    demo,
    journal,
    langgraph,
    mcp,
    messages,
    people,
    resume,
    retry,
    run,
    serve,
    submit,
    tasks,
    worker,
)
from .config_file import command_defaults
from .interrupts import interrupted_exit
from .schedules import schedules_command

__all__ = ["COMMANDS", "GROUPS", "app", "run_command"]

# Every command, by name, in the order `ratchet --help` lists them.
COMMANDS: dict[str, Callable[..., Any]] = {
    "demo": demo.demo_command,
    "run": run.run_command,
    "cancel": run.cancel_command,
    "tasks": tasks.tasks_command,
    "show": tasks.show_command,
    "events": tasks.events_command,
    "journal": journal.journal_command,
    "resume": resume.resume_command,
    "submit": submit.submit_command,
    "schedules": schedules_command,
    "worker": worker.worker_command,
    "mcp": mcp.mcp_command,
    "serve": serve.serve_command,
    "resolve": admin.resolve_command,
    "approve": people.approve_command,
    "deny": people.deny_command,
    "answer": people.answer_command,
    "send": messages.send_command,
    "fork": admin.fork_command,
    "retry": retry.retry_command,
    "gc": admin.gc_command,
    "delete": delete.delete_command,
    "chat": chat.chat_command,
    "sessions": chat.sessions_command,
    "migrate": admin.migrate_command,
}

# Commands with subcommands (`ratchet langgraph import`), listed after the commands.
GROUPS: dict[str, typer.Typer] = {
    "langgraph": langgraph.langgraph_app,
}

app = typer.Typer(
    name="ratchet",
    invoke_without_command=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
for _name, _command in COMMANDS.items():
    app.command(_name)(_command)
for _name, _group in GROUPS.items():
    app.add_typer(_group, name=_name)


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
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="Read settings from FILE instead of ./ratchet.toml (RATCHET_CONFIG names one too); "
            "flags and environment variables still win.",
        ),
    ] = None,
) -> None:
    """Ratchet: a durable runtime for LLM agents. Progress only moves forward."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        return
    # The config file's settings are the defaults of the command about to run (cli/config_file.py).
    name = ctx.invoked_subcommand
    command = cast(Any, ctx.command).get_command(ctx, name)  # the app is a group: it has commands
    ctx.default_map = {name: command_defaults(command, config=config)}


# --------------------------------------------------------------------------- the exit path


def _fail(message: str) -> int:
    # The message may quote what a person or a model wrote: its control characters are shown, not run.
    one_line = " ".join(printable(message).split())
    print(f"error: {one_line}", file=sys.stderr)
    return 2


# Newer Typer runs on its own copy of click, older Typer on click itself; either
# way Typer's BadParameter derives from that click's UsageError and ClickException.
_UsageError = cast("type[Exception]", typer.BadParameter.__mro__[1])
_ClickException = cast("type[Exception]", typer.BadParameter.__mro__[2])


def _usage_message(exc: Any) -> str:
    hint = f"; see `{exc.ctx.command_path} --help`" if exc.ctx else ""
    return f"{exc.format_message().rstrip('.')}{hint}"


def _not_utf8(args: list[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 text (Ratchet stores text as UTF-8)."""
    for number, arg in enumerate(args, start=1):
        problem = utf8_problem(arg)
        if problem is not None:
            return f"argument {number} of the command line is not valid UTF-8 ({problem}); give it as UTF-8"
    return None


def run_command(argv: list[str] | None = None) -> int:
    """Run the command `argv` names (default: the program's arguments); return its exit code.

    0 is success, 2 bad input (one ``error:`` line on stderr), 130 Ctrl-C;
    `ratchet run` and `ratchet resume` add 1 (the task failed), 3 and 4 (it waits).
    """
    args = sys.argv[1:] if argv is None else argv
    bad_text = _not_utf8(args)
    if bad_text is not None:
        return _fail(bad_text)
    command = typer.main.get_command(app)
    try:
        outcome = command.main(argv, prog_name="ratchet", standalone_mode=False)
    except _UsageError as exc:
        outcome = _fail(_usage_message(exc))
    except _ClickException as exc:
        outcome = _fail(cast(Any, exc).format_message())
    except typer.Abort:  # click's answer to a KeyboardInterrupt
        outcome = interrupted_exit(args)
    except (InputError, StoreError) as exc:
        outcome = _fail(exc.message)
    return outcome if isinstance(outcome, int) else 0

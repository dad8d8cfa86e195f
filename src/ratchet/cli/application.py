"""The `ratchet` application: every command registered in one place, and the one exit path.

`run_command` is the only place that turns an error into an exit code: bad input of
any kind (a usage error, an `InputError`, a `StoreError`) ends in one line on
stderr, ``error: <what to do>``, and exit code 2; Ctrl-C is 130 (0 for `ratchet
worker`, see `ratchet.cli.interrupts`). The commands that run a task (`run`,
`resume`) choose their own codes (`ratchet.cli.exits`). `ratchet.cli.main`, the
program, calls it once it has made Ctrl-C its own.

No command's module is imported here: `COMMANDS` names where each lives and
the line ``ratchet --help`` lists it with, and the program imports only the
command it runs (`ratchet.cli.lazy`), so `ratchet --version` and `ratchet
tasks` start in a fraction of the time every command's imports took.

To add a command: write it in the module of its family (or a new one), as a
Typer function that parses its options and calls `run_async` on an ``async
def`` that does the work (or a ``typer.Typer`` for a group of subcommands);
register it in `COMMANDS` below with the first paragraph of its docstring, and
add its name to the list the tests pin (tests/cli/test_cli_commands.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from .._distribution import DISTRIBUTION
from ..errors import InputError, StoreError
from ..limits import utf8_problem
from .config_file import command_defaults
from .interrupts import interrupted_exit
from .lazy import LazyCommand, LazyGroup

__all__ = ["COMMANDS", "app", "run_command"]

# Every command, by name, in the order `ratchet --help` lists them (a group of subcommands,
# `ratchet langgraph import`, last): where it lives, and the first paragraph of its help.
COMMANDS: dict[str, LazyCommand] = {
    "demo": LazyCommand(
        "demo:demo_command",
        "Deploy a service with a scripted agent, kill its worker mid-deploy, resume: every effect once.",
    ),
    "run": LazyCommand(
        "run:run_command", "Plan INSTRUCTION into steps and carry them out with the agent's model and tools."
    ),
    "cancel": LazyCommand(
        "run:cancel_command", "Cancel a task that has not ended, with its open steps and queued wake-ups."
    ),
    "tasks": LazyCommand(
        "tasks:tasks_command",
        "List tasks, oldest first, at most --limit of them "
        "(then the rows that cannot be read, as `unreadable`).",
    ),
    "show": LazyCommand(
        "tasks:show_command",
        "Show one task: its status, steps, what it waits on, its checkpoints and latest events.",
    ),
    "events": LazyCommand(
        "tasks:events_command", "Print a task's events, oldest first (one JSON object per line with --json)."
    ),
    "stream": LazyCommand(
        "stream:stream_command",
        "Print a task's stream (its model's text as written, its workflow's values) until the task ends.",
    ),
    "journal": LazyCommand(
        "journal:journal_command",
        "Show a task's journaled calls in seq order: what ran, in which run, replayed or live, "
        "in doubt or retried (each earlier attempt under its call).",
    ),
    "replay-check": LazyCommand(
        "replay_check:replay_check_command",
        "Replay stored tasks' journals against the code installed here; say where any diverges.",
    ),
    "resume": LazyCommand(
        "resume:resume_command", "Run a task here, from where its journal stopped, until it ends or waits."
    ),
    "submit": LazyCommand(
        "submit:submit_command",
        "Queue INSTRUCTION for the workers (`ratchet worker`) and print the task's id.",
    ),
    "schedules": LazyCommand(
        "schedules:schedules_command",
        "List the schedules (`ratchet submit --every`), soonest due first; or act on one.",
    ),
    "worker": LazyCommand(
        "worker:worker_command",
        "Run tasks from the store until SIGTERM or Ctrl-C (or, with --until-idle, until none is left).",
    ),
    "workers": LazyCommand(
        "workers:workers_command",
        "List the live workers, idle ones included: slots in use, tasks held, last heartbeat.",
    ),
    "mcp": LazyCommand(
        "mcp:mcp_command",
        "Serve the store's tasks over MCP: state://agents/AGENT/tasks/TASK resources, subscriptions, tools.",
    ),
    "serve": LazyCommand(
        "serve:serve_command", "Serve the HTTP API (OpenAPI at /api/openapi.json) over the store."
    ),
    "resolve": LazyCommand(
        "admin:resolve_command",
        "Settle a tool call that was in flight when its worker stopped (a task waiting(in_doubt)).",
    ),
    "approve": LazyCommand(
        "people:approve_command", "Approve the tool call a task waits for (waiting(approval)); it then runs."
    ),
    "deny": LazyCommand(
        "people:deny_command",
        "Deny the tool call a task waits for; the call does not run and the agent is told why.",
    ),
    "answer": LazyCommand(
        "people:answer_command",
        "Answer the question a task waits on (waiting(input)); it goes on with the answer.",
    ),
    "send": LazyCommand(
        "messages:send_command",
        "Send a message to a task (its workflow's ctx.receive NAME, or an agent's `note`).",
    ),
    "fork": LazyCommand(
        "fork:fork_command",
        "Start a new task from one of a task's checkpoints or steps; the original is left as it is.",
    ),
    "compare": LazyCommand(
        "compare:compare_command",
        "Show tasks side by side: each one's outcome, tokens, cost and wall time, its steps, the tool "
        "calls each made (and which differ), and where their journals part.",
    ),
    "eval": LazyCommand(
        "evals:eval_command",
        "Run recorded tasks again with another model, tools answered from their journals; score each.",
    ),
    "retry": LazyCommand(
        "retry:retry_command",
        "Retry a failed or cancelled task: a new task replays what succeeded and runs on from there.",
    ),
    "gc": LazyCommand(
        "admin:gc_command",
        "Delete old checkpoints (each task's newest is always kept), or the tasks kept past --retain.",
    ),
    "delete": LazyCommand(
        "delete:delete_command",
        "Delete an ended task and all of it (journal, events, messages, artifacts, checkpoints).",
    ),
    "export": LazyCommand(
        "export:export_command",
        "Write each task the filters match as one JSON line (record, steps, journal, events), oldest first.",
    ),
    "chat": LazyCommand(
        "chat:chat_command",
        "Chat with an assistant that keeps your task list; every turn is a durable task.",
    ),
    "sessions": LazyCommand("chat:sessions_command", "List sessions, most recently updated first."),
    "migrate": LazyCommand(
        "admin:migrate_command",
        "Create the database if needed and bring its schema to this version of Ratchet.",
    ),
    "limit": LazyCommand(
        "limits:limit_app", "Set, list and delete the rate and concurrency limits every worker honours."
    ),
    "costs": LazyCommand(
        "costs:costs_command", "Add up what model calls cost, by UTC day, agent and model, with the total."
    ),
    "budget": LazyCommand(
        "budget:budget_app",
        "Daily spend caps beyond a task: set, list or delete an agent's or a label's.",
    ),
    "langgraph": LazyCommand(
        "langgraph:langgraph_app",
        "LangGraph on Ratchet's store: import a SqliteSaver or PostgresSaver database.",
    ),
}


class _Ratchet(LazyGroup):
    LAZY = COMMANDS


app = typer.Typer(
    name="ratchet",
    cls=_Ratchet,
    invoke_without_command=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _ratchet_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # only `--version` reads it

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
    from ..printable import printable  # here: it imports pydantic, which `ratchet --version` needs not

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

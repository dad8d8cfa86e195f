"""The `ratchet` command line (Typer + Rich).

- `application`: the app, every command registered in it, and `run_command` (the one exit path);
- `interrupts`: Ctrl-C, answered by one handler from the program's first moment to its last;
- `options`: the options and arguments shared by several commands;
- `store_access`: running a command's coroutine, opening its store;
- `views`: what `show` and a finished run display, read from the store;
- `render`: Rich output for people (`long_text`: a text of any length in a table, in linear time);
  `json_output`: ``--json`` for programs;
- `progress`: the live progress view of `ratchet run`;
- `exits`: the exit codes of the commands that run a task;
- `agent_options`: the options of `run` and `submit` that describe the agent, one bundle;
  `agent_spec`: the agent built from them, each checked;
- the commands, one module per family: `tasks` (tasks, show, events), `run`
  (run, cancel), `resume`, `worker`, `submit` (submit), `schedules`, `admin`
  (resolve, gc, migrate), `fork`, `people` (approve, deny, answer), `chat` (chat,
  sessions), `demo`, `mcp` (the MCP server; the SDK is loaded only when it runs).

Every command takes ``--store URL`` (or ``RATCHET_STORE``). docs/cli.md
describes them for people.

Importing this package imports no command (`app` is looked up on first use):
`main` makes Ctrl-C its own before it spends a second importing them.
"""

from __future__ import annotations

import sys
import typing

from .interrupts import Interrupts, interrupted_exit

if typing.TYPE_CHECKING:
    from .application import app

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    """Run the `ratchet` program and exit with its code (docs/cli.md lists them).

    0 is success, 2 bad input (one ``error:`` line on stderr), 130 Ctrl-C (0
    for `ratchet worker`, which a Ctrl-C stops as asked); `ratchet run` and
    `ratchet resume` add 1 (the task failed), 3, 4 (it waits) and 5 (the store failed).
    """
    args = sys.argv[1:] if argv is None else argv
    code = interrupted_exit(args)
    interrupts = Interrupts.install(code)
    try:
        from .application import run_command

        code = run_command(argv)
        if interrupts is not None and interrupts.pending:  # a Ctrl-C Python dropped on the way
            code = interrupts.exit_code
    except KeyboardInterrupt:  # raised by a command's coroutine cancelled by Ctrl-C, not answered by it
        pass
    except Exception:
        # The Ctrl-C's `Interrupted`, raised inside a library that made it an error of its own
        # (pydantic-core reports it as a SchemaError when it lands while a model is built): the
        # program still ends as interrupted, with no traceback.
        if interrupts is None or not interrupts.pending:
            raise
    finally:
        if interrupts is not None:
            interrupts.ending()
    sys.exit(code)


def __getattr__(name: str) -> typing.Any:
    if name == "app":
        from .application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

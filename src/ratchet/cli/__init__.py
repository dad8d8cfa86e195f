"""The `ratchet` command line (Typer + Rich).

- `application`: the app, every command registered in it, and `main` (the one exit path);
- `options`: the options and arguments shared by several commands;
- `store_access`: running a command's coroutine, opening its store;
- `views`: what `show` and a finished run display, read from the store;
- `render`: Rich output for people; `json_output`: ``--json`` for programs;
- `progress`: the live progress view of `ratchet run`;
- `exits`: the exit codes of the commands that run a task;
- `agent_spec`: the agent `run` and `submit` build from their options;
- the commands, one module per family: `tasks` (tasks, show, events), `run`
  (run, cancel), `resume`, `worker`, `submit` (submit), `schedules`, `admin`
  (resolve, fork, gc, migrate), `people` (approve, deny, answer), `chat` (chat,
  sessions), `demo`, `mcp` (the MCP server; the SDK is loaded only when it runs).

Every command takes ``--store URL`` (or ``RATCHET_STORE``). docs/cli.md
describes them for people.
"""

from __future__ import annotations

from .application import app, main

__all__ = ["app", "main"]

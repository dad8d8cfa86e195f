"""The commands `ratchet` has: a new or removed command is a deliberate change to this list."""

from __future__ import annotations

import typer

from ratchet.cli import app

COMMANDS = [
    "answer",
    "approve",
    "cancel",
    "chat",
    "delete",
    "demo",
    "deny",
    "events",
    "fork",
    "gc",
    "journal",
    "mcp",
    "migrate",
    "resolve",
    "resume",
    "retry",
    "run",
    "schedules",
    "send",
    "serve",
    "sessions",
    "show",
    "submit",
    "tasks",
    "worker",
]


def test_the_registered_commands_are_exactly_these() -> None:
    group = typer.main.get_group(app)

    assert sorted(group.commands) == COMMANDS


def test_every_command_that_opens_the_users_store_can_force_it_open() -> None:
    group = typer.main.get_group(app)

    for name in set(COMMANDS) - {"demo"}:  # the demo's --store names a store it makes for itself
        options = {option for param in group.commands[name].params for option in param.opts}
        assert {"--store", "--force-open"} <= options, name

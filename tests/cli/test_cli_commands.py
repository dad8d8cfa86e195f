"""The commands `ratchet` has: a new or removed command is a deliberate change to this list."""

from __future__ import annotations

from typing import Any

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
    "langgraph",
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
        command = group.commands[name]
        # A group's (`ratchet langgraph`) are its subcommands'.
        commands = command.commands.values() if hasattr(command, "commands") else [command]
        for each in commands:
            options = {option for param in each.params for option in param.opts}
            assert {"--store", "--force-open"} <= options, f"{name} {each.name}"


def test_the_groups_have_exactly_these_subcommands() -> None:
    group = typer.main.get_group(app)

    langgraph: Any = group.commands["langgraph"]
    assert sorted(langgraph.commands) == ["import"]

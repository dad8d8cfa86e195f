"""The commands `ratchet` has: a new or removed command is a deliberate change to this list.

Each is imported only when it is used (`ratchet.cli.lazy`), so ``ratchet
--help`` lists it by the summary written where it is registered: the tests
here hold that summary to the command's own help.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import typer

from ratchet.cli import app
from ratchet.cli.application import COMMANDS as REGISTERED
from ratchet.cli.lazy import first_paragraph

from ..helpers.cli import ratchet_command, ratchet_env

COMMANDS = [
    "answer",
    "approve",
    "budget",
    "cancel",
    "chat",
    "compare",
    "costs",
    "delete",
    "demo",
    "deny",
    "eval",
    "events",
    "export",
    "fork",
    "gc",
    "journal",
    "langgraph",
    "limit",
    "mcp",
    "migrate",
    "replay-check",
    "resolve",
    "resume",
    "retry",
    "run",
    "schedules",
    "send",
    "serve",
    "sessions",
    "show",
    "stream",
    "submit",
    "tasks",
    "worker",
    "workers",
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
    limit: Any = group.commands["limit"]
    assert sorted(limit.commands) == ["delete", "list", "set"]
    budget: Any = group.commands["budget"]
    assert sorted(budget.commands) == ["delete", "list", "set"]


def test_each_commands_listed_summary_is_the_first_paragraph_of_its_own_help() -> None:
    group = typer.main.get_group(app)

    for name, registered in REGISTERED.items():
        own = first_paragraph(group.commands[name].help)
        assert registered.summary == own, (
            f"`ratchet --help` lists {name!r} as {registered.summary!r}, its own help says {own!r}: "
            "change the summary in ratchet/cli/application.py to the docstring's first paragraph"
        )


def test_help_lists_every_command_with_its_summary_in_the_registered_order(tmp_path: Path) -> None:
    done = subprocess.run(
        ratchet_command("--help"),
        cwd=tmp_path,
        env=ratchet_env(COLUMNS="250"),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    panel = done.stdout.split("─ Commands ─")[1]
    rows = [line.strip("│ ").split(None, 1) for line in panel.splitlines() if line.startswith("│")]
    assert [(name, " ".join(summary.split())) for name, summary in rows] == [
        (name, registered.summary) for name, registered in REGISTERED.items()
    ]

"""`run` and `submit` take the agent's options from one bundle, `AgentOptions`, and hand it over whole."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from typer.testing import CliRunner

from ratchet.cli import app
from ratchet.cli.agent_options import AgentOptions, with_agent_options

FIELDS = [field.name for field in dataclasses.fields(AgentOptions)]


def test_run_and_submit_take_the_bundles_options_first_in_its_order() -> None:
    group = typer.main.get_group(app)

    for name in ("run", "submit"):
        taken = [param.name for param in group.commands[name].params]
        assert taken[: len(FIELDS)] == FIELDS, name
        assert not set(FIELDS) & set(taken[len(FIELDS) :]), name


def test_a_command_gets_one_bundle_of_what_was_given_and_its_own_options_by_name() -> None:
    seen: list[tuple[AgentOptions, bool]] = []

    @with_agent_options
    def command(
        options: AgentOptions, loud: Annotated[bool, typer.Option("--loud", help="Louder.")] = False
    ) -> None:
        """A command taking the agent's options."""
        seen.append((options, loud))

    one = typer.Typer()
    one.command()(command)
    done = CliRunner().invoke(one, ["do it", "-m", "scripted:x.json", "--tools", "a.py", "--loud"])

    assert done.exit_code == 0, done.output
    assert seen == [
        (
            AgentOptions(instruction="do it", model=["scripted:x.json"], tools=["a.py"]),
            True,
        )
    ]

"""Commands imported when they run: the `ratchet` program imports only the command it was given.

Importing every command's module to start any one of them cost `ratchet
--version` half a second (the engine, the agent, the providers, the HTTP
server). Click's answer is a group whose `get_command` imports a command on
first use (click's docs, "Lazily Loading Subcommands"); `LazyGroup` is that
group for Typer:

- each command is a `LazyCommand`: where its function (or its Typer group)
  lives, and its summary, the line ``ratchet --help`` lists it with;
- ``ratchet --help`` and the shell's completion of a command's name list the
  summaries and import nothing; running a command, or asking for its own
  ``--help``, imports its module and builds it as Typer would have.

A summary is the first paragraph of the command's docstring (of its group's
callback, for a group), written out where the command is registered so the
listing can show it unimported; tests/cli/test_cli_commands.py fails if the
two ever differ.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["LazyCommand", "LazyGroup", "first_paragraph"]


def first_paragraph(help_text: str | None) -> str:
    """A help text's first paragraph on one line: what ``--help`` lists a command with."""
    return " ".join((help_text or "").strip().split("\n\n")[0].split())


@dataclass(frozen=True)
class LazyCommand:
    """A command of the `ratchet` program, named by where it lives.

    Args:
        target: ``module:attribute``, the module relative to `ratchet.cli`: a
            Typer command function, or a ``typer.Typer`` (a group of subcommands).
        summary: what ``ratchet --help`` lists it with: the first paragraph of
            its help, on one line.
    """

    target: str
    summary: str

    def load(self, name: str) -> Any:
        """Import the command and build it, as the click command Typer makes of it."""
        module, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(f".{module}", __package__), attribute)
        if isinstance(found, typer.Typer):
            group = typer.main.get_group(found)
            group.name = name
            return group
        single = typer.Typer(add_completion=False)
        single.command(name)(found)
        return typer.main.get_command(single)

    def listed(self, name: str) -> TyperCommand:
        """A stand-in that has only the name and the summary: what a listing reads of a command."""
        return TyperCommand(name, help=self.summary)


class _Commands(MutableMapping[str, Any]):
    """A group's commands by name, in their order: each imported and built when first looked up."""

    def __init__(self, lazy: Mapping[str, LazyCommand]) -> None:
        self._commands: dict[str, Any] = dict(lazy)  # a LazyCommand until it is loaded

    def __getitem__(self, name: str) -> Any:
        command = self._commands[name]
        if isinstance(command, LazyCommand):
            command = self._commands[name] = command.load(name)
        return command

    def __contains__(self, name: object) -> bool:
        return name in self._commands  # without importing it

    def get(self, name: str, default: Any = None) -> Any:
        # Not Mapping's: it would take a KeyError raised while a module is imported for "no such command".
        return self[name] if name in self._commands else default

    def __setitem__(self, name: str, command: Any) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)

    def listed(self, name: str) -> Any:
        """What a listing reads of `name`: its stand-in until it is loaded, then itself (None: none)."""
        command = self._commands.get(name)
        return command.listed(name) if isinstance(command, LazyCommand) else command


class LazyGroup(TyperGroup):
    """A Typer group whose commands are `LAZY` (a subclass names them), each imported when it is used.

    A listing (``--help``, completing a command's name) reads the summaries;
    everything else (running a command, its own help, completing its options)
    gets the command itself.
    """

    LAZY: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        commands = _Commands(self.LAZY)
        for name, command in self.commands.items():  # any Typer registered the usual way
            commands[name] = command
        self.commands = commands
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        assert isinstance(self.commands, _Commands)
        return self.commands.listed(cmd_name) if self._listing else self.commands.get(cmd_name)

    @contextlib.contextmanager
    def _summaries(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with self._summaries():
            super().format_help(ctx, formatter)

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        with self._summaries():
            return super().shell_complete(ctx, incomplete)

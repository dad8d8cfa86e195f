"""The filters of `ratchet tasks`, declared once for every command that picks tasks by them.

`ratchet tasks`, `export`, and `cancel`, `retry` and `delete` without a TASK
take the same options, spelled, documented and checked the same way:
`FilterOptions` holds them, and `with_filter_options` gives a command their
parameters at the place of its `FilterOptions` parameter (Typer reads a
command's options from its parameters only; `ratchet.cli.agent_options` does
the same for the agent's options). What they mean is docs/finding-tasks.md;
one parser, `ratchet.views.task_filter`, reads them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from ..records import TaskFilter
from ..views.task_filter import FilterText, cli_option, parse_filter
from .completion import complete_status

__all__ = ["NO_FILTERS", "FilterOptions", "with_filter_options"]

R = TypeVar("R")


@dataclasses.dataclass(frozen=True)
class FilterOptions:
    """The filters as the command line gave them; `where` checks them and makes the `TaskFilter`."""

    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            "-s",
            metavar="WORDS",
            help="Only tasks with a word starting with each of these in their name, instruction, "
            "or result or error (any case, accents ignored).",
        ),
    ] = None
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            metavar="STATUS",
            autocompletion=complete_status,
            help="Only tasks with this status (repeat for any of several): queued, running, waiting, "
            "completed, failed or cancelled.",
        ),
    ] = None
    waiting_on: Annotated[
        list[str] | None,
        typer.Option(
            "--waiting-on",
            metavar="REASON",
            help="Only tasks waiting on this (repeat for any of several): approval, input, timer, "
            "in_doubt, code, stale, message or children.",
        ),
    ] = None
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label", metavar="KEY=VALUE", help="Only tasks with this label (repeat: all of them)."
        ),
    ] = None
    name: Annotated[str | None, typer.Option("--name", help="Only tasks of this name (exactly).")] = None
    agent: Annotated[str | None, typer.Option("--agent", help="Only tasks of this agent (exactly).")] = None
    model: Annotated[
        str | None, typer.Option("--model", help="Only tasks of this model (exactly: openai:gpt-4o-mini).")
    ] = None
    code_version: Annotated[
        str | None,
        typer.Option(
            "--code-version", metavar="VERSION", help="Only tasks that started on this version of their code."
        ),
    ] = None
    parent: Annotated[
        str | None, typer.Option("--parent", metavar="TASK", help="Only the child tasks of this task.")
    ] = None
    id_prefix: Annotated[
        str | None, typer.Option("--id-prefix", metavar="TEXT", help="Only tasks whose id starts with this.")
    ] = None
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="TIME", help="Only tasks created at or after TIME: ISO 8601 or 2h (ago)."
        ),
    ] = None
    until: Annotated[
        str | None,
        typer.Option(
            "--until", metavar="TIME", help="Only tasks created before TIME: ISO 8601 or 30m (ago)."
        ),
    ] = None
    min_cost: Annotated[
        str | None,
        typer.Option("--min-cost", metavar="USD", help="Only tasks that cost at least this (0.50)."),
    ] = None
    max_cost: Annotated[
        str | None, typer.Option("--max-cost", metavar="USD", help="Only tasks that cost at most this.")
    ] = None

    def text(self) -> FilterText:
        """The filters as typed, for the parser."""
        return FilterText(
            status=self.status or (),
            waiting_on=self.waiting_on or (),
            name=self.name,
            agent=self.agent,
            model=self.model,
            code_version=self.code_version,
            parent=self.parent,
            id_prefix=self.id_prefix,
            label=self.label or (),
            search=self.search,
            since=self.since,
            until=self.until,
            min_cost=self.min_cost,
            max_cost=self.max_cost,
        )

    def given(self) -> list[str]:
        """The options given, as the command line spells them (``--status``): none means every task."""
        return [
            cli_option(field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) not in (None, [], ())
        ]

    def where(self) -> TaskFilter:
        """The filter these options ask for.

        Raises:
            InputError: a value is not one its option takes (one line naming the option).
        """
        return parse_filter(self.text(), cli_option)


NO_FILTERS = FilterOptions()
"""No filter given: the default a command declares its `FilterOptions` parameter with."""


def with_filter_options(command: Callable[..., R]) -> Callable[..., R]:
    """`command` as Typer reads it: its `FilterOptions` parameter replaced by the filters, in its place.

    Typer passes every parameter by name; the filters go into one
    `FilterOptions`, handed to `command` under that parameter's name.
    """
    declared = inspect.signature(command, eval_str=True)
    own = list(declared.parameters.values())
    [bundle] = [parameter for parameter in own if parameter.annotation is FilterOptions]
    at = own.index(bundle)
    bundled = _parameters()
    signature = declared.replace(parameters=[*own[:at], *bundled, *own[at + 1 :]])

    @functools.wraps(command)
    def with_options(**given: Any) -> R:
        options = FilterOptions(**{parameter.name: given.pop(parameter.name) for parameter in bundled})
        return command(**given, **{bundle.name: options})

    with_options.__signature__ = signature  # type: ignore[attr-defined]
    # Typer resolves the annotations too: those copied from `command` name the bundle, not its fields.
    with_options.__annotations__ = {
        parameter.name: parameter.annotation for parameter in signature.parameters.values()
    }
    return with_options


def _parameters() -> list[inspect.Parameter]:
    hints = typing.get_type_hints(FilterOptions, include_extras=True)  # Annotated keeps the typer.Option
    return [
        inspect.Parameter(
            field.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=field.default,
            annotation=hints[field.name],
        )
        for field in dataclasses.fields(FilterOptions)
    ]

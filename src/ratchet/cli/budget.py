"""`ratchet budget set|list|delete`: daily spend caps beyond a task, an agent's or a label's.

A cap limits what the priced model calls of an agent's tasks (``--agent``),
or of the tasks with a label (``--label KEY=VALUE``), cost in a UTC day,
across every worker on the store (`ratchet.engine.spend_caps`, docs/limits.md).
"""

from __future__ import annotations

import math
from typing import Annotated

import typer

from ..errors import InputError, StoreNotFound
from ..limits import check_text
from ..printable import plain
from ..records import CapScope, CapSpend, SpendCap, utcnow
from ..store import DEFAULT_STORE_URL, redact_url
from ..views.spend import cap_json
from ..views.task_filter import parse_labels
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption
from .store_access import open_store_for, run_async
from .tables import Listing

__all__ = ["budget_app"]

budget_app = typer.Typer(name="budget", invoke_without_command=True)

AgentCapOption = Annotated[
    str | None, typer.Option("--agent", metavar="NAME", help="The cap of the tasks of this agent.")
]
LabelCapOption = Annotated[
    str | None,
    typer.Option("--label", metavar="KEY=VALUE", help="The cap of the tasks with this label."),
]


@budget_app.callback()
def _group(ctx: typer.Context) -> None:
    """Daily spend caps beyond a task: set, list or delete an agent's or a label's."""
    if ctx.invoked_subcommand is None:  # as `ratchet` alone: the help, exit 0
        typer.echo(ctx.get_help())


@budget_app.command("set")
def set_command(
    daily: Annotated[
        float,
        typer.Option("--daily", metavar="USD", help="US dollars the priced model calls may cost a UTC day."),
    ],
    agent: AgentCapOption = None,
    label: LabelCapOption = None,
    approve_over: Annotated[
        bool,
        typer.Option(
            "--approve-over",
            help="At the cap a model call waits for a person's `ratchet approve` (default: it fails).",
        ),
    ] = False,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Set the daily spend cap of an agent's tasks or of a label's (again: replace its figure).

    What the tasks' priced model calls cost since UTC midnight counts, from
    when the cap is set, across every worker; unpriced calls count nothing.
    At 80 % a task's events say so (`spend_cap_pressure`, once a day); at the
    cap a new model call fails, or with --approve-over waits for a person.
    """
    if not math.isfinite(daily) or not 0 < daily <= 1e9:
        raise InputError(f"--daily {daily:g}: give US dollars a day, more than 0 (e.g. --daily 20)")
    scope, name = _cap_of(agent, label)
    cap = SpendCap(scope=scope, name=name, daily=daily, approve_over=approve_over)
    kept = run_async(_set(store, cap))
    if as_json:
        json_output.print_json(cap_json(kept))
        return
    over = "waits for a person's approval" if approve_over else "fails"
    render.print_line(
        f"spend cap {plain(cap.target)}: {daily:g} USD a UTC day ({kept.spent:.4g} spent today); "
        f"at the cap a model call {over}"
    )


@budget_app.command("list")
def list_command(
    store: StoreOption = DEFAULT_STORE_URL, force_open: ForceOpenOption = False, as_json: JsonOption = False
) -> None:
    """List the spend caps, with what their tasks spent today (UTC)."""
    listed = run_async(_list(store))
    if as_json:
        json_output.print_json([cap_json(spend) for spend in listed])
        return
    if not listed:
        render.print_line(f"no spend cap on {redact_url(store)}; `ratchet budget set` sets one")
        return
    listing = Listing()
    listing.id_column("cap")
    listing.word_column("daily USD", justify="right")
    listing.word_column("spent today", justify="right")
    listing.word_column("used", justify="right")
    listing.word_column("at the cap")
    for spend in listed:
        listing.add_row(
            plain(spend.cap.target),
            f"{spend.cap.daily:g}",
            f"{spend.spent:.4g}",
            f"{100 * spend.spent / spend.cap.daily:.0f} %",
            "waits for approval" if spend.cap.approve_over else "fails",
        )
    listing.print(render.console)


@budget_app.command("delete")
def delete_command(
    agent: AgentCapOption = None,
    label: LabelCapOption = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
) -> None:
    """Delete the spend cap of an agent's tasks or of a label's, and what it counted."""
    scope, name = _cap_of(agent, label)
    if not run_async(_delete(store, scope, name)):
        raise InputError(f"there is no spend cap {scope}:{name}; `ratchet budget list` lists them")
    render.print_line(f"deleted the spend cap {plain(f'{scope}:{name}')}")


def _cap_of(agent: str | None, label: str | None) -> tuple[CapScope, str]:
    """The cap's scope and name from --agent or --label, exactly one of them.

    Raises:
        InputError: both or neither are given, or the one given is not a name or a label.
    """
    if (agent is None) == (label is None):
        raise InputError("give --agent NAME or --label KEY=VALUE, one of them")
    if agent is not None:
        check_text(agent, "--agent")
        if not agent.strip():
            raise InputError("--agent: give the agent's name, as `ratchet tasks` shows it")
        return CapScope.AGENT, agent
    assert label is not None
    [(key, value)] = parse_labels("--label", [label]).items()
    return CapScope.LABEL, f"{key}={value}"


async def _set(url: str, cap: SpendCap) -> CapSpend:
    async with open_store_for(url, create=True) as store:
        kept = await store.set_spend_cap(cap)
        found = [s for s in await store.list_spend_caps(day=utcnow().date()) if s.cap.target == kept.target]
    return found[0] if found else CapSpend(cap=kept, day=utcnow().date())


async def _list(url: str) -> list[CapSpend]:
    try:
        async with open_store_for(url, create=False) as store:
            return await store.list_spend_caps(day=utcnow().date())
    except StoreNotFound:
        return []  # nothing was ever stored there


async def _delete(url: str, scope: CapScope, name: str) -> bool:
    try:
        async with open_store_for(url, create=False) as store:
            return await store.delete_spend_cap(scope, name)
    except StoreNotFound:
        return False

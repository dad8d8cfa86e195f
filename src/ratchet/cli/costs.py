"""`ratchet costs`: what model calls cost, added up by day, agent and model (`ratchet.views.costs`).

It reads the journal, where each call's cost was kept as it was priced:
every call a store ever recorded counts, whether a cap covers its task or
not, and a call with no known price is counted apart, as unpriced.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..errors import StoreNotFound
from ..printable import plain
from ..store import DEFAULT_STORE_URL, redact_url
from ..views.costs import COST_COLUMNS, CostQuery, cost_query, cost_report
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption
from .store_access import open_store_for, run_async
from .tables import Listing

__all__ = ["costs_command"]


def costs_command(
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="TIME", help="Only calls made at or after TIME: ISO 8601 or 7d (ago)."
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="TIME", help="Only calls made before TIME: ISO 8601 or 1d (ago)."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="NAME", help="Only the calls of this agent's tasks.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", metavar="PROVIDER:NAME", help="Only the calls to this model (gw:gpt-4o)."),
    ] = None,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            metavar="COLUMN",
            help="A row per day, agent or model; again for several (default: all three).",
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """Add up what model calls cost, by UTC day, agent and model, with the total.

    Each model call that succeeded counts on the day it finished, under the
    model it asked for and its task's agent, at the cost priced when it ran.
    Calls no price table priced are counted as unpriced, at $0: set
    priced_as on their endpoint in ratchet.toml to price a gateway's.
    """
    query = cost_query(since=since, until=until, agent=agent, model=model, by=by or COST_COLUMNS)
    report = run_async(_report(store, query))
    if as_json:
        json_output.print_json(report)
        return
    if not report["rows"]:
        render.print_line(f"no model call in {redact_url(store)} matches")
        return
    listing = Listing()
    for column in report["by"]:
        listing.word_column(column)
    for header in ("calls", "unpriced", "tokens", "cost"):
        listing.word_column(header, whole=True, justify="right")
    for row in [*report["rows"], {**dict.fromkeys(report["by"], ""), **report["total"], "total": True}]:
        cells = [plain(str(row[column])) for column in report["by"]]
        if row.get("total"):
            cells[0] = plain("total")
        listing.add_row(*cells, *_figures(row))
    listing.print(render.console)


def _figures(row: dict[str, Any]) -> list[str]:
    return [
        f"{row['calls']:,}",
        f"{row['unpriced_calls']:,}" if row["unpriced_calls"] else "-",
        f"{row['llm_tokens']:,}",
        render.dollars(row["cost"]),
    ]


async def _report(url: str, query: CostQuery) -> dict[str, Any]:
    try:
        async with open_store_for(url, create=False) as store, store.reading() as tx:
            return await cost_report(tx, query)
    except StoreNotFound:  # nothing was ever stored there: nothing cost anything, not an error
        return await cost_report(None, query)

"""What model calls cost, added up by day, agent and model: ``ratchet costs`` and ``GET /api/costs``.

The store adds the journal up by UTC day, agent and model (`cost_totals`);
this reads its window from the options people type (``--since 7d``), keeps
the agent or model asked for, and adds the rows up again by the columns
asked for (``--by agent``: one row an agent), so both readers print one JSON
shape. A call with no known price counts in ``unpriced_calls`` and 0 in
``cost`` (docs/limits.md, "What a task spent").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..records import CostTotal
from ..store import StoreOps
from .task_filter import parse_past_time

__all__ = ["COST_COLUMNS", "CostQuery", "cost_query", "cost_report", "cost_rows"]

# The columns a total may be broken down by, in the order they are printed.
COST_COLUMNS = ("day", "agent", "model")


def cost_rows(totals: Sequence[CostTotal], by: Sequence[str]) -> list[dict[str, Any]]:
    """`totals` added up by the columns `by` names (``day``, ``agent``, ``model``), in that order."""
    columns = [column for column in COST_COLUMNS if column in by]
    rows: dict[tuple[str, ...], dict[str, Any]] = {}
    for total in totals:
        values = {"day": total.day.isoformat(), "agent": total.agent, "model": total.model}
        key = tuple(values[column] for column in columns)
        row = rows.setdefault(key, {**{c: values[c] for c in columns}, **_zero()})
        _add(row, total)
    return [rows[key] for key in sorted(rows)]


@dataclass(frozen=True)
class CostQuery:
    """Which calls a report adds up (the window, an agent, a model) and the columns of its rows."""

    since: dt.datetime | None = None
    until: dt.datetime | None = None
    agent: str | None = None
    model: str | None = None
    by: tuple[str, ...] = COST_COLUMNS


def cost_query(
    *,
    since: str | None = None,
    until: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    by: Sequence[str] = COST_COLUMNS,
    spelled: str = "--{}",
    now: dt.datetime | None = None,
) -> CostQuery:
    """The query the options ask for, each checked now.

    Args:
        since, until: the window, as people type a time (ISO 8601, or how
            long ago: ``7d``); None: unbounded.
        agent, model: only this agent's calls, or this model's.
        by: the columns each row is a total of, among `COST_COLUMNS`.
        spelled: how an option is named in a message (``--{}`` for the CLI,
            ``{}`` for the HTTP API's parameters).

    Raises:
        InputError: a time that is neither, a window that ends before it
            starts, or a column that is not one of `COST_COLUMNS`.
    """
    unknown = [column for column in by if column not in COST_COLUMNS]
    if unknown or not by:
        shown = repr(unknown[0]) if unknown else "nothing"
        raise InputError(f"{spelled.format('by')}: {shown} is not a column; give day, agent or model")
    after = None if since is None else parse_past_time(spelled.format("since"), since, now=now)
    before = None if until is None else parse_past_time(spelled.format("until"), until, now=now)
    if after is not None and before is not None and after >= before:
        raise InputError(
            f"{spelled.format('since')} ({after.isoformat()}) must be before "
            f"{spelled.format('until')} ({before.isoformat()})"
        )
    columns = tuple(column for column in COST_COLUMNS if column in by)
    return CostQuery(since=after, until=before, agent=agent, model=model, by=columns)


async def cost_report(tx: StoreOps | None, query: CostQuery) -> dict[str, Any]:
    """``{"since", "until", "by", "rows": [...], "total": {...}}``: what the calls `query` asks
    for cost (none read without a store, `tx` None: a database that does not exist)."""
    found = [] if tx is None else await tx.cost_totals(since=query.since, until=query.until)
    totals = [
        total
        for total in found
        if (query.agent is None or total.agent == query.agent)
        and (query.model is None or total.model == query.model)
    ]
    whole = _zero()
    for total in totals:
        _add(whole, total)
    return {
        "since": None if query.since is None else query.since.isoformat(),
        "until": None if query.until is None else query.until.isoformat(),
        "by": list(query.by),
        "rows": cost_rows(totals, query.by),
        "total": whole,
    }


def _zero() -> dict[str, Any]:
    return {"calls": 0, "unpriced_calls": 0, "llm_tokens": 0, "cost": 0.0}


def _add(row: dict[str, Any], total: CostTotal) -> None:
    row["calls"] += total.calls
    row["unpriced_calls"] += total.unpriced_calls
    row["llm_tokens"] += total.llm_tokens
    row["cost"] += total.cost

"""The spend caps (`SpendOps`) written once for every SQL database, as part of `SqlOps`.

A cap is one row of ``spend_caps``; what its tasks spent is one row of
``spend_days`` per cap and UTC day, added to by one upsert that finds the
caps covering the task from its agent column and its labels (``task_labels``),
so counting a priced call is one statement in the transaction that records it.

What model calls cost by day, agent and model (`cost_totals`) is one grouped
query over the journal (``operations``, joined to ``tasks`` for the agent),
each dialect reading the JSON of a call's input and meta its own way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from ...errors import CorruptRecord
from ...records import CapScope, CapSpend, CostTotal, SpendCap
from ..ops.spend import SpendOps
from . import rows
from .driver import Driver

__all__ = ["SqlSpend"]

_UNDECODABLE = (ValueError, TypeError, OverflowError)


class SqlSpend(SpendOps):
    """`SpendOps` over a driver; `SqlOps` supplies the driver."""

    _d: Driver

    async def set_spend_cap(self, cap: SpendCap) -> SpendCap:
        params = {
            "scope": str(cap.scope),
            "name": cap.name,
            "daily": cap.daily,
            "approve_over": cap.approve_over,
            "created_at": rows.to_micros(cap.created_at),
            "updated_at": rows.to_micros(cap.updated_at),
        }
        row = await self._d.one("set_spend_cap", params)
        assert row is not None  # the upsert returns the row it kept
        return _cap_from_row(row)

    async def delete_spend_cap(self, scope: CapScope, name: str) -> bool:
        key = {"scope": str(scope), "name": name}
        await self._d.execute("delete_spend_days", key)
        return await self._d.execute("delete_spend_cap", key) > 0

    async def list_spend_caps(self, *, day: dt.date) -> list[CapSpend]:
        found = await self._d.all("list_spend_caps", {"day": day.isoformat()})
        return [_spend_from_row(row, day) for row in found]

    async def spend_for_task(self, task_id: str, *, day: dt.date) -> list[CapSpend]:
        found = await self._d.all("spend_for_task", {"task_id": task_id, "day": day.isoformat()})
        return [_spend_from_row(row, day) for row in found]

    async def count_spend(self, task_id: str, cost: float, *, day: dt.date) -> None:
        await self._d.execute("count_spend", {"task_id": task_id, "cost": cost, "day": day.isoformat()})

    async def mark_spend_pressure(self, scope: CapScope, name: str, *, day: dt.date) -> bool:
        key = {"scope": str(scope), "name": name, "day": day.isoformat()}
        return await self._d.execute("mark_spend_pressure", key) > 0

    async def cost_totals(self, *, since: dt.datetime | None, until: dt.datetime | None) -> list[CostTotal]:
        params = {
            "since": None if since is None else rows.to_micros(since),
            "until": None if until is None else rows.to_micros(until),
        }
        return [_total_from_row(row) for row in await self._d.all("cost_totals", params)]


def _total_from_row(row: Sequence[Any]) -> CostTotal:
    """A total from ``day, agent, model, calls, unpriced_calls, llm_tokens, cost``."""
    day, agent, model, calls, unpriced, tokens, cost = row[:7]
    try:
        return CostTotal(
            day=dt.date.fromisoformat(day),
            agent=agent,
            model=model,
            calls=int(calls),
            unpriced_calls=int(unpriced or 0),
            llm_tokens=int(tokens or 0),
            cost=max(float(cost or 0.0), 0.0),
        )
    except _UNDECODABLE as exc:
        raise CorruptRecord(
            f"the cost of {agent} on {model} on {day}",
            "operations",
            (day, agent, model),
            rows.problem_of(exc),
        ) from exc


def _cap_from_row(row: Sequence[Any]) -> SpendCap:
    """A cap from ``scope, name, daily, approve_over, created_at, updated_at``."""
    scope, name, daily, approve_over, created_at, updated_at = row[:6]
    try:
        return SpendCap(
            scope=scope,
            name=name,
            daily=daily,
            approve_over=bool(approve_over),
            created_at=rows.from_micros(created_at),
            updated_at=rows.from_micros(updated_at),
        )
    except _UNDECODABLE as exc:
        raise CorruptRecord(
            f"the spend cap {scope}:{name}", "spend_caps", (scope, name), rows.problem_of(exc)
        ) from exc


def _spend_from_row(row: Sequence[Any], day: dt.date) -> CapSpend:
    """A cap's day from the cap's columns, then ``spent, pressure_told`` (NULL when it spent nothing)."""
    spent, told = row[6], row[7]
    return CapSpend(cap=_cap_from_row(row), day=day, spent=spent or 0.0, pressure_told=bool(told))

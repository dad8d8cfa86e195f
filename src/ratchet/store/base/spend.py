"""`SpendWrappers`: the spend caps (`SpendOps`) in `StateStore`, each in a transaction of its own.

What each does is documented on `SpendOps` (store/ops/spend.py). Setting
and deleting a cap take no ``fence=``: a person does that, not a task's run;
counting toward a cap and noting its 80 % are a run's writes, behind its lease.
"""

from __future__ import annotations

import datetime as dt

from ...records import CapScope, CapSpend, CostTotal, Lease, SpendCap
from ..ops.spend import SpendOps
from .wrapping import OwnTransactions

__all__ = ["SpendWrappers"]


class SpendWrappers(SpendOps, OwnTransactions):
    """Setting, listing and deleting spend caps and counting toward them, each in a transaction."""

    async def set_spend_cap(self, cap: SpendCap) -> SpendCap:
        return await self._write(None, lambda tx: tx.set_spend_cap(cap))

    async def delete_spend_cap(self, scope: CapScope, name: str) -> bool:
        return await self._write(None, lambda tx: tx.delete_spend_cap(scope, name))

    async def list_spend_caps(self, *, day: dt.date) -> list[CapSpend]:
        return await self._read(lambda tx: tx.list_spend_caps(day=day))

    async def spend_for_task(self, task_id: str, *, day: dt.date) -> list[CapSpend]:
        return await self._read(lambda tx: tx.spend_for_task(task_id, day=day))

    async def count_spend(
        self, task_id: str, cost: float, *, day: dt.date, fence: Lease | None = None
    ) -> None:
        return await self._write(fence, lambda tx: tx.count_spend(task_id, cost, day=day))

    async def mark_spend_pressure(
        self, scope: CapScope, name: str, *, day: dt.date, fence: Lease | None = None
    ) -> bool:
        return await self._write(fence, lambda tx: tx.mark_spend_pressure(scope, name, day=day))

    async def cost_totals(self, *, since: dt.datetime | None, until: dt.datetime | None) -> list[CostTotal]:
        return await self._read(lambda tx: tx.cost_totals(since=since, until=until))

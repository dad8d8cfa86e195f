"""The journal's counts (`JournalCountOps`) written once for every SQL database, as part of `SqlOps`.

Each is one ``COUNT(*)`` over the rows of one task, which the table's primary
key ``(task_id, seq)`` finds without reading another task's.
"""

from __future__ import annotations

from ..ops.journal_counts import JournalCountOps
from .driver import Driver

__all__ = ["SqlJournalCounts"]


class SqlJournalCounts(JournalCountOps):
    """`JournalCountOps` over a driver; `SqlOps` supplies the driver."""

    _d: Driver

    async def count_ops(self, task_id: str) -> int:
        return await self._count("count_ops", task_id)

    async def count_events(self, task_id: str) -> int:
        return await self._count("count_events", task_id)

    async def _count(self, query: str, task_id: str) -> int:
        row = await self._d.one(query, {"task_id": task_id})
        assert row is not None  # a count always answers one row
        return int(row[0])

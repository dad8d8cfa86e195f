"""The journal's counts (`JournalCountOps`) of the memory store, as part of its operations."""

from __future__ import annotations

from ..ops.journal_counts import JournalCountOps

__all__ = ["MemoryJournalCounts"]


class MemoryJournalCounts(JournalCountOps):
    """Counts over the memory store's tables of operations and events (JSON text by task, then seq)."""

    ops: dict[str, dict[int, str]]
    events: dict[str, dict[int, str]]

    async def count_ops(self, task_id: str) -> int:
        return len(self.ops.get(task_id, {}))

    async def count_events(self, task_id: str) -> int:
        return len(self.events.get(task_id, {}))

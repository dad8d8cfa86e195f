"""`JournalCountOps`: how many calls a task's journal holds, and how many events it wrote.

Part of `StoreOps` (store.py); the memory store (store/memory/journal_counts.py)
and every SQL store (store/sql/journal_counts.py) implement them with the
behaviour written here. A listing that pages a task's journal or events (the
HTTP API's ``/journal`` and ``/events``) says how many there are in all with
these, without reading a row.
"""

from __future__ import annotations

import abc

__all__ = ["JournalCountOps"]


class JournalCountOps(abc.ABC):
    """Counting a task's operations and events."""

    @abc.abstractmethod
    async def count_ops(self, task_id: str) -> int:
        """How many operations the task's journal holds (0 when none, or no task has that id)."""

    @abc.abstractmethod
    async def count_events(self, task_id: str) -> int:
        """How many events the task wrote, rows that cannot be read included (0 when none)."""

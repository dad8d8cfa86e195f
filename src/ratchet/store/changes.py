"""Change feeds: how a waiter hears that a store changed.

A transaction names the topics it touched (`TRIGGERS` when it queued work or
released a lease, ``events_topic(task_id)`` when it appended a task's event,
``stream_topic(task_id)`` when it appended to a task's stream,
`TASKS` when it logged a task change: a task created or its status moved);
when it commits, the store wakes this process's feeds watching those topics.
Other processes' changes reach a feed through the database where it can tell
(PostgreSQL's NOTIFY), or by looking again every ``poll`` seconds (SQLite).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["TASKS", "TRIGGERS", "ChangeFeed", "events_topic", "stream_topic"]

TRIGGERS = "triggers"
"""The change-feed topic of new work: a trigger was queued or a lease released."""

TASKS = "tasks"
"""The change-feed topic of the task-change log (ratchet.records.changes): a task created or its status
moved."""


def events_topic(task_id: str) -> str:
    """The change-feed topic of a task's events."""
    return f"events:{task_id}"


def stream_topic(task_id: str) -> str:
    """The change-feed topic of a task's stream (records/stream.py)."""
    return f"streams:{task_id}"


class ChangeFeed:
    """Wakes a waiter when something it watches may have changed (see `StateStore.changes`).

    A change published between two waits is not lost: the next `wait`
    returns at once.
    """

    def __init__(self, topics: Iterable[str], poll: float | None) -> None:
        self.topics = frozenset(topics)
        self.poll = poll
        self._changed = asyncio.Event()

    def notify(self) -> None:
        self._changed.set()

    async def wait(self, timeout: float) -> bool:
        """Wait for a change, at most `timeout` seconds; return whether one was published.

        On a store that cannot publish other processes' changes (SQLite),
        the wait also ends after the store's poll interval, so the caller
        looks again.
        """
        if self.poll is not None:
            timeout = min(timeout, self.poll)
        try:
            async with asyncio.timeout(max(timeout, 0)):
                await self._changed.wait()
        except TimeoutError:
            return False
        self._changed.clear()
        return True

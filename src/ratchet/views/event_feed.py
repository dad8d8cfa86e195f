"""`follow_events`: a task's events from a point on, in order, as they are written.

`ratchet events --follow` and the HTTP API's live stream of a task's events
(ratchet.serve.live) both read a task's events through this one loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..errors import CorruptRecord
from ..records import Event, Task
from ..store.base import StateStore
from ..store.changes import events_topic
from .task import in_seq_order

__all__ = ["EVENTS_PAGE", "follow_events", "last_seq_of"]

EVENTS_PAGE = 500
"""How many events one read takes at most: memory stays bounded however long the task's history."""


def last_seq_of(items: list[Event | CorruptRecord]) -> int | None:
    """The highest seq among a batch's events and unreadable event rows (None when none has one)."""
    seqs = [item.seq if isinstance(item, Event) else item.key[-1] for item in items]
    return max((seq for seq in seqs if isinstance(seq, int) and not isinstance(seq, bool)), default=None)


async def follow_events(
    store: StateStore,
    task_id: str,
    *,
    after_seq: int = 0,
    follow: bool = True,
    idle: float = 30.0,
    page: int = EVENTS_PAGE,
) -> AsyncIterator[list[Event | CorruptRecord]]:
    """Yield the task's events after `after_seq`, oldest first, in batches of at most `page`.

    An event row that cannot be read comes in its place as a `CorruptRecord`.
    Without `follow`, it ends once the stored events are given; with it, it
    waits for more (woken by the store's change feed, looking again at least
    every `idle` seconds and after each store poll) and ends once the task
    has ended and every event it wrote is given.
    """
    async with store.changes(events_topic(task_id)) as feed:
        last_seq = after_seq
        while True:
            # One read for both, so a task seen ended has all its events seen too
            # (a status change and its event commit together).
            async with store.reading() as tx:
                try:
                    task: Task | None = await tx.get_task(task_id)
                except CorruptRecord:  # its events are rows of their own, still readable
                    task = None
                unreadable: list[CorruptRecord] = []
                events = await tx.list_events(task_id, after_seq=last_seq, limit=page, unreadable=unreadable)
            shown = in_seq_order(events, unreadable)
            if shown:
                yield shown
                last_seq = max(last_seq, last_seq_of(shown) or last_seq)
            if len(shown) == page:
                continue  # more are stored: the next page, at once
            if not follow or (task is not None and task.status.is_terminal):
                return
            # PostgreSQL wakes us on each new event (NOTIFY); SQLite looks again after a short poll.
            await feed.wait(idle)

"""Acting on every task a filter keeps, a page at a time: the batch verbs, retention and export.

`task_pages` walks the tasks that pass a `TaskFilter` in pages of at most
`PAGE` rows, each page one query of the store's listing (`list_task_rows`)
that starts after the last row of the page before (keyset paging): however
many tasks match, only one page of them is held, and a query never reads
the ones already walked. Each page is read in a transaction of its own, so
a long walk holds no transaction open (on PostgreSQL, one would keep
vacuum from reclaiming what others delete meanwhile).

The walk is of the tasks made before it started (created before then): a
task made meanwhile, such as the retry a batch retry just made, is not
walked. Acting on a task moves no other one: the pages are in an order of
columns the acting does not change (created, or updated for tasks that
ended), and each page starts after the last row seen.

`act_on_each` does one action to each task walked, as the single-task verb
does it: an action the task's state refuses (`InputError`: cancelling a task
that ended, deleting one with children) is the task skipped, with the
refusal's message as the reason; a store that fails stops the batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptRecord, InputError
from ..records import TaskCursor, TaskFilter, TaskOrder, TaskRow, TaskSort, utcnow
from ..store import StateStore

__all__ = [
    "NEWEST_FIRST",
    "PAGE",
    "BatchOutcome",
    "SkippedTask",
    "act_on_each",
    "started_before",
    "task_pages",
]

PAGE = 100
"""The rows of one page of a walk: what a batch holds, and acts on before it reads the next."""

NEWEST_FIRST = TaskOrder(TaskSort.CREATED, descending=True)
"""The batch verbs' order: a child task (made after its parent) comes before its parent."""


@dataclass(frozen=True)
class SkippedTask:
    """A task a batch left as it was, and why (the message the single-task verb gives)."""

    task_id: str
    reason: str


@dataclass
class BatchOutcome:
    """What a batch did: how many tasks matched when it started, how many it acted on, which it skipped.

    Attributes:
        action: ``cancel``, ``retry`` or ``delete``.
        matched: the tasks that passed the filter when the batch started.
        done: the tasks acted on.
        skipped: the tasks left as they were, each with the reason.
    """

    action: str
    matched: int = 0
    done: int = 0
    skipped: list[SkippedTask] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """``{"matched", "done", "skipped": [{"id", "reason"}]}``, as the CLI and the HTTP API say it."""
        return {
            "matched": self.matched,
            "done": self.done,
            "skipped": [{"id": skipped.task_id, "reason": skipped.reason} for skipped in self.skipped],
        }


def started_before(where: TaskFilter) -> TaskFilter:
    """`where`, narrowed to the tasks created before now: those a walk starting now walks."""
    now = utcnow()
    until = now if where.until is None or where.until > now else where.until
    return dataclasses.replace(where, until=until)


async def task_pages(
    store: StateStore,
    where: TaskFilter,
    *,
    order: TaskOrder = NEWEST_FIRST,
    page: int = PAGE,
    unreadable: list[CorruptRecord] | None = None,
) -> AsyncIterator[list[TaskRow]]:
    """The rows of the tasks `where` keeps (made before the walk started), `page` at a time, in `order`.

    Rows whose columns cannot be read are left out, and added to `unreadable`.
    """
    bounded = started_before(where)
    after: TaskCursor | None = None
    while True:
        dropped: list[CorruptRecord] = []
        rows = await store.list_task_rows(bounded, order=order, after=after, limit=page, unreadable=dropped)
        if unreadable is not None:
            unreadable.extend(dropped)
        if rows:
            yield rows
        if not rows or len(rows) + len(dropped) < page:
            return
        after = TaskCursor.after(rows[-1], order)
        await asyncio.sleep(0)  # between pages, what else this process runs takes its turn


async def act_on_each(
    store: StateStore,
    where: TaskFilter,
    action: str,
    act: Callable[[str], Awaitable[object]],
    *,
    order: TaskOrder = NEWEST_FIRST,
    page: int = PAGE,
    limit: int | None = None,
) -> BatchOutcome:
    """Call `act` on the id of each task `where` keeps, a page at a time; say what was done.

    Args:
        action: the name of what `act` does, for the outcome.
        act: the single-task verb; an `InputError` it raises skips the task.
        order: the order the tasks are acted on in.
        limit: act on at most this many (done or skipped); the rest are left for later.

    Raises:
        StoreError: the store failed; the tasks acted on so far stay as they are now.
    """
    bounded = started_before(where)
    outcome = BatchOutcome(action, matched=await store.count_task_rows(bounded))
    unreadable: list[CorruptRecord] = []
    seen = 0
    async for rows in task_pages(store, bounded, order=order, page=page, unreadable=unreadable):
        for row in rows:
            if limit is not None and seen >= limit:
                return outcome
            seen += 1
            try:
                await act(row.id)
            except (InputError, CorruptRecord) as refused:
                outcome.skipped.append(SkippedTask(row.id, refused.message))
            else:
                outcome.done += 1
    for problem in {corrupt.message: corrupt for corrupt in unreadable}.values():
        key = problem.key[0] if problem.key else problem.what
        outcome.skipped.append(SkippedTask(str(key), problem.message))
    return outcome

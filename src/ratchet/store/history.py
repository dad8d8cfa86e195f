"""`PartitionedHistory`: a store that keeps the journal and events of ended tasks in partitions.

On PostgreSQL (store/sql/postgresql/history.py, schema version 23) the journal
(``operations``) and the ``events`` are partitioned: a task's rows are written
to the live partition while it may run, a retention pass moves an ended
task's rows to the partition of its end's UTC day and status (`archive`),
and drops a partition whose every task its rule expired (`drop_expired`)
rather than deleting the rows one by one. Stores without partitions (memory,
SQLite) have none (`StateStore.history` is None): their retention deletes
rows (docs/stores.md, "Retention" and "Partitioned history").
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..records import TaskStatus

__all__ = ["ArchivedDay", "PartitionedHistory", "whole_days"]

DAY = dt.timedelta(days=1)


def whole_days(cutoff: dt.datetime) -> dt.datetime:
    """The start of `cutoff`'s UTC day: what ended before it is in partitions of days wholly past it."""
    utc = cutoff.astimezone(dt.UTC)
    return dt.datetime.combine(utc.date(), dt.time(), tzinfo=dt.UTC)


@dataclass(frozen=True)
class ArchivedDay:
    """A partition of ended tasks: the UTC day they ended on, their status, how many tasks it holds."""

    day: dt.date
    status: TaskStatus
    tasks: int


class PartitionedHistory(abc.ABC):
    """The partitions of a store's ended tasks' journal and events."""

    @abc.abstractmethod
    async def archive(self, statuses: Collection[TaskStatus], *, now: dt.datetime, batch: int = 200) -> int:
        """Move the journal and events of the tasks of `statuses` (the ended ones) no live lease holds to the
        partitions of their end's day and status, `batch` tasks a transaction; return how many moved.

        A running task's rows never leave the live partition; an event added to an archived task
        later (a retry says so on its original) is written to the live partition, numbered on
        from the archived ones, and is deleted with the task.
        """

    @abc.abstractmethod
    async def drop_expired(self, cutoffs: Mapping[TaskStatus, dt.datetime]) -> dict[TaskStatus, int]:
        """Delete whole partitions: each of a status in `cutoffs` whose day ended before the
        status's cut-off goes, with every row of its tasks in the other tables, in one transaction.
        Return how many tasks went, by status.

        A partition holding a task with a child task that stays is kept (as `delete_task` refuses
        such a parent); so is one whose drop would wait for a lock longer than a moment (a long
        transaction reads the table): the next pass tries again.
        """

    @abc.abstractmethod
    async def days(self) -> list[ArchivedDay]:
        """The partitions there are, oldest first."""

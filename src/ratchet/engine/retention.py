"""Retention: how long an ended task is kept, by its status, and deleting the tasks kept long enough.

A `Retention` is a rule a status: ``completed=30d`` deletes a completed
task 30 days after it ended (its last change, ``updated_at``: an ended task
changes no more), as Temporal's namespace retention counts from a workflow's
close. Only the ended statuses (completed, failed, cancelled) have one; a
status with no rule is kept for ever.

`delete_expired` deletes each such task as ``ratchet delete`` does
(`StateStore.delete_task`: the task and every row of it, each task in a
transaction of its own), walking the tasks a page at a time, oldest change
first, along the index of update times up to the rule's cut-off
(`ratchet.engine.batches`). The store's own refusals hold: a task with child
tasks stays until they are deleted (a child ends before its parent, so it
is usually walked first), and one a worker still holds stays until its
lease ends. Workers apply a retention every `Worker.RETENTION_EVERY`
seconds (``ratchet worker --retain``); ``ratchet gc --retain`` applies one
once (docs/stores.md, "Retention").

On a store whose ended tasks' journal and events are partitioned by day
(`StateStore.history`: PostgreSQL), a pass first moves the ended tasks of the
statuses it has rules for to their day's partitions, then drops each
partition whose whole day the rule expired, with its tasks; then deletes
one by one what is left of the tasks of those whole days (a parent whose
child stays, a task a live lease held). A task there is deleted once its
whole UTC day is past the rule's age, so at most a day later than on a
store without partitions (docs/stores.md, "Partitioned history").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InputError
from ..policy import parse_duration
from ..records import TaskFilter, TaskOrder, TaskSort, TaskStatus, utcnow
from ..store import StateStore
from ..store.history import whole_days
from .batches import PAGE, BatchOutcome, act_on_each

__all__ = ["ENDED", "OLDEST_CHANGE_FIRST", "Retention", "RetentionRule", "count_expired", "delete_expired"]

ENDED = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)
"""The statuses a retention rule is for: a task that has not ended is never deleted by age."""

OLDEST_CHANGE_FIRST = TaskOrder(TaskSort.UPDATED)
"""The order expired tasks are deleted in: a range of the index of update times, walked from its start."""


@dataclass(frozen=True)
class RetentionRule:
    """Tasks of `status` are deleted `seconds` after they ended (`written` as people wrote it: ``30d``)."""

    status: TaskStatus
    seconds: float
    written: str

    def cutoff(self, now: dt.datetime) -> dt.datetime:
        """The end times this rule deletes at `now`: those before it."""
        return now - dt.timedelta(seconds=self.seconds)

    def expired(self, now: dt.datetime, *, by_day: bool = False) -> TaskFilter:
        """The filter of the tasks this rule deletes at `now` (`by_day`: those of UTC days wholly expired)."""
        cutoff = whole_days(self.cutoff(now)) if by_day else self.cutoff(now)
        return TaskFilter(statuses=frozenset({self.status}), updated_before=cutoff)

    def __str__(self) -> str:
        return f"{self.status}={self.written}"


@dataclass(frozen=True)
class Retention:
    """How long ended tasks are kept: at most one rule a status; no rule, no deletion."""

    rules: tuple[RetentionRule, ...] = ()

    @classmethod
    def parse(cls, texts: Iterable[str], option: str = "--retain") -> Retention:
        """The retention ``STATUS=DURATION`` texts give (``completed=30d``, ``failed=12h``).

        Raises:
            InputError: a text is not STATUS=DURATION, names a status that
                has not ended or one given before, or its duration is none.
        """
        rules: dict[TaskStatus, RetentionRule] = {}
        ended = ", ".join(str(status) for status in ENDED)
        for text in texts:
            name, equals, written = text.partition("=")
            if not equals:
                raise InputError(
                    f"{option}: {text[:60]!r} is not STATUS=DURATION; e.g. {option} completed=30d"
                )
            try:
                status = TaskStatus(name.strip().lower())
            except ValueError:
                status = None
            if status not in ENDED:
                raise InputError(f"{option}: {name.strip()[:60]!r} is no ended status; keep one of {ended}")
            assert status is not None
            if status in rules:
                raise InputError(f"{option}: {status} is given twice; give each status one duration")
            try:
                seconds = parse_duration(written)
            except InputError as error:
                raise InputError(f"{option} {status}: {error.message}") from None
            if seconds <= 0:
                raise InputError(f"{option} {status}: keep a task for some time, e.g. {status}=30d")
            rules[status] = RetentionRule(status, seconds, written.strip())
        return cls(tuple(rules.values()))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __str__(self) -> str:
        return ", ".join(str(rule) for rule in self.rules) or "none"


async def count_expired(
    store: StateStore, retention: Retention, *, now: dt.datetime | None = None
) -> dict[TaskStatus, int]:
    """How many tasks each rule of `retention` would delete at `now`, by status (a dry run)."""
    moment = now or utcnow()
    by_day = store.history is not None
    return {
        rule.status: await store.count_task_rows(rule.expired(moment, by_day=by_day))
        for rule in retention.rules
    }


async def delete_expired(
    store: StateStore,
    retention: Retention,
    *,
    now: dt.datetime | None = None,
    page: int = PAGE,
    limit: int | None = None,
) -> dict[RetentionRule, BatchOutcome]:
    """Delete the tasks each rule of `retention` expires at `now`; say what each rule did.

    A task the store refuses to delete (it has child tasks, or its lease is
    still live) is skipped, with the reason; `limit` bounds the tasks a rule
    walks (the rest wait for the next time).

    Raises:
        StoreError: the store failed; what was deleted so far stays deleted.
    """
    moment = now or utcnow()
    dropped: dict[TaskStatus, int] = {}
    if store.history is not None and retention:
        await store.history.archive([rule.status for rule in retention.rules], now=moment)
        dropped = await store.history.drop_expired(
            {rule.status: rule.cutoff(moment) for rule in retention.rules}
        )
    done: dict[RetentionRule, BatchOutcome] = {}
    for rule in retention.rules:
        done[rule] = await act_on_each(
            store,
            rule.expired(moment, by_day=store.history is not None),
            "delete",
            store.delete_task,
            order=OLDEST_CHANGE_FIRST,
            page=page,
            limit=limit,
        )
        gone = dropped.get(rule.status, 0)
        done[rule].matched += gone
        done[rule].done += gone
    return done

"""The `Runtime`'s batch verbs: cancel, retry or delete every task a filter keeps; delete expired tasks.

`BatchMethods` is part of `Runtime`. Each verb takes the filters of
`list_tasks` (docs/finding-tasks.md) and does to each task what the verb of
one task does (`cancel`, `retry` queued for a worker, the store's
`delete_task`), so each task is journaled and evented as if it were acted on
alone. The tasks are walked a page at a time, newest first (a child before
its parent), and only those made before the batch started
(`ratchet.engine.batches`); a task the verb refuses is skipped, with the
refusal as the reason. ``ratchet cancel|retry|delete`` with filters and
``POST /api/tasks/batch`` call these.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Protocol

from typing_extensions import Unpack

from ..engine.batches import BatchOutcome, act_on_each
from ..engine.retention import Retention, RetentionRule, count_expired, delete_expired
from ..errors import InputError
from ..limits import check_text
from ..records import Task, TaskFilter, TaskStatus
from ..store import StateStore
from .reading import TaskFilters, task_filter

__all__ = ["BatchMethods"]


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    async def cancel(self, task_id: str, *, reason: str = ...) -> Task: ...

    async def retry(self, task_id: str, *, from_step: int | None = None, queue: bool = True) -> str: ...


class BatchMethods:
    """``Runtime.cancel_tasks``, ``retry_tasks``, ``delete_tasks``; ``count_expired``, ``delete_expired``."""

    async def cancel_tasks(
        self: _Host,
        where: TaskFilter | None = None,
        /,
        *,
        reason: str = "cancelled by a person",
        **filters: Unpack[TaskFilters],
    ) -> BatchOutcome:
        """Cancel every task the filter keeps that has not ended, as `cancel` cancels one.

        ``await rt.cancel_tasks(agent="triage", status="waiting")``; or a
        `TaskFilter` (``ratchet.records.ALL_TASKS`` for every task). A task
        that ended already is skipped, with the reason.

        Raises:
            InputError: no filter is given, or both a `TaskFilter` and
                filters; a filter is not one; the reason holds a NUL character.
        """
        check_text(reason, "the reason")
        chosen = _chosen(where, filters)

        async def cancel(task_id: str) -> None:
            await self.cancel(task_id, reason=reason)

        return await act_on_each(self.store, chosen, "cancel", cancel)

    async def retry_tasks(
        self: _Host, where: TaskFilter | None = None, /, **filters: Unpack[TaskFilters]
    ) -> BatchOutcome:
        """Retry every failed or cancelled task the filter keeps, as `retry` does one, queued for workers.

        Each retry is a new task (``<id>-retry1``) linked to the old one; a
        task that has not ended, or completed, is skipped, with the reason.
        The retries made are not walked (only tasks made before the batch).

        Raises:
            InputError: no filter is given, or both kinds; a filter is not one.
        """
        chosen = _chosen(where, filters)

        async def retry(task_id: str) -> None:
            await self.retry(task_id, queue=True)

        return await act_on_each(self.store, chosen, "retry", retry)

    async def delete_tasks(
        self: _Host, where: TaskFilter | None = None, /, **filters: Unpack[TaskFilters]
    ) -> BatchOutcome:
        """Delete every ended task the filter keeps and all of it, as ``ratchet delete`` deletes one.

        Newest first, so a child task goes before its parent. A task that
        has not ended, that a worker still holds, or with child tasks left is
        skipped, with the reason.

        Raises:
            InputError: no filter is given, or both kinds; a filter is not one.
        """
        chosen = _chosen(where, filters)
        return await act_on_each(self.store, chosen, "delete", self.store.delete_task)

    async def count_expired(
        self: _Host, retain: Retention | Mapping[str, str], *, now: dt.datetime | None = None
    ) -> dict[TaskStatus, int]:
        """How many tasks `delete_expired` would delete now, by status (nothing is deleted).

        Raises:
            InputError: `retain` is no retention (a status that has not ended, a bad duration).
        """
        return await count_expired(self.store, _retention(retain), now=now)

    async def delete_expired(
        self: _Host, retain: Retention | Mapping[str, str], *, now: dt.datetime | None = None
    ) -> dict[RetentionRule, BatchOutcome]:
        """Delete the ended tasks kept longer than `retain` says, as ``ratchet gc --retain --yes`` does.

        ``await rt.delete_expired({"completed": "30d", "failed": "90d"})``
        deletes each completed task 30 days after it ended, each failed one
        after 90 (docs/stores.md, "Retention"); what a worker started with
        ``--retain`` does every few minutes.

        Raises:
            InputError: `retain` is no retention.
        """
        return await delete_expired(self.store, _retention(retain), now=now)


def _chosen(where: TaskFilter | None, filters: TaskFilters) -> TaskFilter:
    if where is not None and filters:
        raise InputError("give the tasks once: a TaskFilter or filters, not both")
    if where is None and not filters:
        raise InputError(
            "say which tasks: give filters (status=..., agent=...) or a TaskFilter (ALL_TASKS: every task)"
        )
    return where if where is not None else task_filter(**filters)


def _retention(retain: Retention | Mapping[str, str]) -> Retention:
    if isinstance(retain, Retention):
        return retain
    return Retention.parse((f"{status}={age}" for status, age in retain.items()), "retain")

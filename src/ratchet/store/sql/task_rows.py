"""The task listing (`TaskRowOps`) written once for every SQL database, as part of `SqlOps`.

Filters, order, offset and limit all run in the database, over the columns
kept beside each task's record (schema version 11): the record is never read.
The query is chosen by its leading filter (name, then agent, else creation
time alone), so that each walks the index that filter starts and stops at
the limit; the other filters are conditions on the rows it walks.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...errors import CorruptRecord
from ...records import ALL_TASKS, Task, TaskFilter, TaskRow, WaitReason
from ..ops.task_rows import TaskRowOps
from . import rows
from .driver import Driver, Params

__all__ = ["SqlTaskRows"]

# Bounds of the creation time that let every filter be a range on the index (microseconds).
_EARLIEST = -(2**62)
_LATEST = 2**62


def _params(where: TaskFilter) -> tuple[str, Params]:
    """The name's stem of the query that leads with `where`'s most selective filter, and its parameters."""
    stem = "by_name" if where.name is not None else "by_agent" if where.agent is not None else ""
    statuses = sorted(str(status) for status in where.statuses)
    return stem, {
        "name": where.name,
        "agent": where.agent,
        "parent_id": where.parent_id,
        "statuses": json.dumps(statuses) if statuses else None,
        "since": _EARLIEST if where.since is None else rows.to_micros(where.since),
        "until": _LATEST if where.until is None else rows.to_micros(where.until),
    }


def _row(found: Sequence[Any]) -> TaskRow:
    task_id, name, status, waiting_on, agent, parent_id, created_at, updated_at = found
    try:
        waits = None if waiting_on is None else WaitReason(waiting_on)
    except ValueError as exc:
        problem = f"its waiting_on column holds {waiting_on!a}, not a reason to wait"
        raise CorruptRecord(f"task {task_id}", "tasks", (task_id,), problem) from exc
    return TaskRow(
        id=task_id,
        name=name,
        status=rows.task_status(status, task_id),
        waiting_on=waits,
        agent=agent,
        parent_id=parent_id,
        created_at=rows.from_micros(created_at),
        updated_at=None if updated_at is None else rows.from_micros(updated_at),
    )


def _query(kind: str, stem: str) -> str:
    return "_".join(part for part in (kind, stem) if part)


class SqlTaskRows(TaskRowOps):
    """`TaskRowOps` over a driver; `SqlOps` supplies the driver."""

    _d: Driver

    async def list_task_rows(
        self,
        where: TaskFilter = ALL_TASKS,
        *,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[TaskRow]:
        stem, params = _params(where)
        name = _query("task_rows", stem) + ("_desc" if newest_first else "_asc")
        found = await self._d.all(name, {**params, "limit": limit, "offset": offset})
        return rows.decode_each(found, _row, unreadable)

    async def count_task_rows(self, where: TaskFilter = ALL_TASKS) -> int:
        stem, params = _params(where)
        row = await self._d.one(_query("count_task_rows", stem), params)
        assert row is not None
        return int(row[0])

    async def get_tasks(
        self, task_ids: Sequence[str], *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Task]:
        found = {row[0]: row for row in await self._d.all("get_tasks", {"ids": json.dumps(list(task_ids))})}
        in_order = [found[task_id] for task_id in task_ids if task_id in found]
        return rows.decode_each(in_order, rows.task_from_row, unreadable)

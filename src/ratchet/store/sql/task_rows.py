"""The task listing (`TaskRowOps`) written once for every SQL database, as part of `SqlOps`.

Filters, order, the cursor, offset and limit all run in the database, over
the columns kept beside each task's record: the record is never read. A query
is composed of named blocks (catalogue.Queries): it starts from the rows of
its most selective filter (the search's words, a label, the parent, an id
prefix, the name, the agent; else every task, walked in the order's own
index), so that each walks an index and, in that index's order, stops at the
limit; the other filters are conditions on the rows it walks.

What finds a task beside its columns is written here too: its labels (a
table of their own) when it is made, and the words a search finds it by
(`task_words`: the search index, FTS5 or a tsvector) when it is made and
again when it ends, the one time its result or error is set.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import CorruptRecord
from ...records import (
    ALL_TASKS,
    OLDEST_FIRST,
    Task,
    TaskCursor,
    TaskFilter,
    TaskOrder,
    TaskRow,
    TaskSort,
    WaitReason,
)
from ...records.listing import task_words
from ..ops.task_rows import TaskRowOps, check_cursor
from . import rows
from .driver import Driver, Params, Row

__all__ = ["SEARCH_VERSION", "SqlTaskRows", "search_params"]

SEARCH_VERSION = 16
"""The schema version that made the search index: tasks stored before it are indexed by `search_params`."""

# Bounds of the creation time that let every filter be a range on the index (microseconds).
_EARLIEST = -(2**62)
_LATEST = 2**62
# Past every character: an id that starts with a prefix sorts below the prefix followed by it.
_LAST_CHARACTER = "\U0010ffff"


def _lead(where: TaskFilter) -> str:
    """The rows a query starts from: those of `where`'s most selective filter, else every task."""
    if where.words:
        return "text"
    if where.labels:
        return "label"
    for lead, value in (
        ("parent", where.parent_id),
        ("id_prefix", where.id_prefix),
        ("name", where.name),
        ("agent", where.agent),
    ):
        if value is not None:
            return lead
    return "all"


# The leads whose index goes on with the creation time (then the id): its range is one of that index.
_RANGED = frozenset({"parent", "name", "agent"})


def _blocks(where: TaskFilter, order: TaskOrder) -> list[str]:
    """The blocks that start a query of the tasks `where` keeps: its rows, then a condition each."""
    lead = _lead(where)
    blocks = [f"task_rows_from_{lead}"]
    if lead in _RANGED or (lead == "all" and order.by is TaskSort.CREATED):
        blocks.append("task_rows_created_in")
    elif where.since is not None or where.until is not None:
        blocks.append("task_rows_created_within")
    given = {
        "statuses": where.statuses,
        "waiting_on": where.waiting_on,
        "name": where.name is not None and lead != "name",
        "agent": where.agent is not None and lead != "agent",
        "model": where.model is not None,
        "code_version": where.code_version is not None,
        "parent": where.parent_id is not None and lead != "parent",
        "id_prefix": where.id_prefix is not None,
        "min_cost": where.min_cost is not None,
        "max_cost": where.max_cost is not None,
        "updated_before": where.updated_before is not None,
        "labels": _other_labels(where, lead),
    }
    return blocks + [f"task_rows_where_{name}" for name, wanted in given.items() if wanted]


def _other_labels(where: TaskFilter, lead: str) -> tuple[tuple[str, str], ...]:
    """The labels `where` asks for that the rows of `lead` do not hold already."""
    return where.labels[1:] if lead == "label" else where.labels


def _json_list(values: Iterable[str]) -> str | None:
    listed = sorted(values)
    return json.dumps(listed) if listed else None


def _params(where: TaskFilter) -> Params:
    label_key, label_value = where.labels[0] if where.labels else (None, None)
    others = _other_labels(where, _lead(where))
    prefix = where.id_prefix
    return {
        "words": json.dumps(where.words),
        "label_key": label_key,
        "label_value": label_value,
        "labels": json.dumps(dict(others)) if others else None,
        "name": where.name,
        "agent": where.agent,
        "model": where.model,
        "code_version": where.code_version,
        "parent_id": where.parent_id,
        "id_prefix": prefix,
        "id_prefix_end": None if prefix is None else prefix + _LAST_CHARACTER,
        "statuses": _json_list(str(status) for status in where.statuses),
        "waiting_on": _json_list(str(reason) for reason in where.waiting_on),
        "since": _EARLIEST if where.since is None else rows.to_micros(where.since),
        "until": _LATEST if where.until is None else rows.to_micros(where.until),
        "min_cost": where.min_cost,
        "max_cost": where.max_cost,
        "updated_before": None if where.updated_before is None else rows.to_micros(where.updated_before),
    }


def _after_params(after: TaskCursor | None) -> Params:
    if after is None:
        return {}
    value = after.value
    if isinstance(value, dt.datetime):
        value = rows.to_micros(value)
    return {"after_value": value, "after_created": rows.to_micros(after.created_at), "after_id": after.id}


def _row(found: Sequence[Any]) -> TaskRow:
    task_id, name, status, waiting_on, agent, parent_id, created_at, updated_at, model, cost = found
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
        updated_at=rows.from_micros(updated_at),
        model=model,
        cost=float(cost),
    )


def search_params(found: Iterable[Row]) -> list[Params]:
    """The search index's rows (``put_task_words``) of the tasks in `found` (``id, status, record``).

    A task whose record does not parse is left out: it is listed, not found
    by a search, and `get_task` says what is wrong with it.
    """
    indexed: list[Params] = []
    for row in found:
        try:
            task = rows.task_from_row(row)
        except CorruptRecord:
            continue
        indexed.append({"task_id": task.id, "words": json.dumps(task_words(task), ensure_ascii=False)})
    return indexed


class SqlTaskRows(TaskRowOps):
    """`TaskRowOps` over a driver; `SqlOps` supplies the driver (and calls `_index_task`)."""

    _d: Driver

    async def list_task_rows(
        self,
        where: TaskFilter = ALL_TASKS,
        *,
        order: TaskOrder = OLDEST_FIRST,
        after: TaskCursor | None = None,
        limit: int | None = None,
        offset: int = 0,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[TaskRow]:
        check_cursor(order, after)
        direction = f"{order.by}_{'desc' if order.descending else 'asc'}"
        parts = ["task_rows_select", *_blocks(where, order)]
        if after is not None:
            parts.append(f"task_rows_after_{direction}")
        parts += [f"task_rows_order_{direction}", "task_rows_page"]
        params = {**_params(where), **_after_params(after), "limit": limit, "offset": offset}
        found = await self._d.all("+".join(parts), params)
        return rows.decode_each(found, _row, unreadable)

    async def count_task_rows(self, where: TaskFilter = ALL_TASKS) -> int:
        row = await self._d.one("+".join(["task_rows_count", *_blocks(where, OLDEST_FIRST)]), _params(where))
        assert row is not None
        return int(row[0])

    async def get_tasks(
        self, task_ids: Sequence[str], *, unreadable: list[CorruptRecord] | None = None
    ) -> list[Task]:
        found = {row[0]: row for row in await self._d.all("get_tasks", {"ids": json.dumps(list(task_ids))})}
        in_order = [found[task_id] for task_id in task_ids if task_id in found]
        return rows.decode_each(in_order, rows.task_from_row, unreadable)

    async def _index_task(self, task: Task, *, created: bool) -> None:
        """Keep what finds `task`: its labels when it is `created`, its words then and when it ends."""
        if created and task.labels:
            await self._d.execute(
                "insert_task_labels", {"task_id": task.id, "labels": json.dumps(task.labels)}
            )
        if created or task.status.is_terminal:
            words = json.dumps(task_words(task), ensure_ascii=False)
            await self._d.execute("put_task_words", {"task_id": task.id, "words": words})

"""The journal and events of ended tasks in partitions, on PostgreSQL (`PartitionedHistory`).

``operations`` and ``events`` are partitioned by RANGE on ``archive``
(migration 0023): 0 is the live partition, where every statement of a run
writes and reads (its writes leave ``archive`` to its default, 0; a new
event is numbered from the live partition), so the planner prunes them to
it. An archive number above 0 is the partition of the tasks that ended on
one UTC day with one status: ``day * 4 + status``, status 1 completed, 2
failed, 3 cancelled, one partition per table for each (``operations_20261130_completed``).

`archive` moves an ended task's rows there (an UPDATE of the partition key
moves a row), a batch of tasks a transaction, and notes the task in
``archived_tasks``; `drop_expired` drops a partition whose day its status's
rule expired, with its tasks' rows in the other tables, in one transaction.
Both run one at a time (an advisory lock), off the path of the runs: a
worker's retention pass and ``ratchet gc --retain``.

Primary keys hold ``archive`` (a partitioned table's must), so (task_id,
seq) is unique within a partition only; it stays unique across them because
a task's rows are in one partition but for events added after it was
archived, which are numbered on from the last one moved (``last_event``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from ....records import TaskStatus
from ...history import ArchivedDay, PartitionedHistory
from .. import catalogue, rows
from .schema import DIALECT, Target

__all__ = ["PostgresHistory", "archive_of", "partition_name"]

STATUS_CODES = {TaskStatus.COMPLETED: 1, TaskStatus.FAILED: 2, TaskStatus.CANCELLED: 3}
_STATUSES = {code: status for status, code in STATUS_CODES.items()}
TABLES = ("operations", "events")
_EPOCH = dt.date(1970, 1, 1)
_MICROS_A_DAY = 86_400_000_000
_PARTITION = re.compile(r"^operations_(\d{8})_(completed|failed|cancelled)$")
_LOCK_NOT_AVAILABLE = "55P03"
_T = TypeVar("_T")


def archive_of(ended_micros: int, status: TaskStatus) -> int:
    """The archive number of a task of `status` that ended at `ended_micros` (UTC)."""
    return (ended_micros // _MICROS_A_DAY) * 4 + STATUS_CODES[status]


def _day_of(archive: int) -> dt.date:
    return _EPOCH + dt.timedelta(days=archive // 4)


def partition_name(table: str, archive: int) -> str:
    return f"{table}_{_day_of(archive):%Y%m%d}_{_STATUSES[archive % 4]}"


def _archive_named(name: str) -> int | None:
    found = _PARTITION.match(name)
    if found is None:
        return None
    day = dt.datetime.strptime(found[1], "%Y%m%d").date()
    return (day - _EPOCH).days * 4 + STATUS_CODES[TaskStatus(found[2])]


class PostgresHistory(PartitionedHistory):
    """The partitions of one PostgreSQL store, on connections of its pool."""

    def __init__(
        self, pool: Callable[[], AsyncConnectionPool], target: Target, error: Callable[..., Exception]
    ) -> None:
        self._pool = pool
        self._target = target
        self._error = error  # store_error: a psycopg error as the store's
        self._q = catalogue.queries(DIALECT)

    async def _transaction(self, work: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run ``work(conn, *args)`` in one transaction under the history's lock; roll back if it raises."""
        async with self._pool().connection() as conn:
            try:
                await conn.execute(self._q["begin_write"])
                try:
                    await conn.execute(self._q["history_lock"])
                    done = await work(conn, *args)
                except BaseException:
                    if not conn.closed:
                        await conn.execute(self._q["rollback"])
                    raise
                await conn.execute(self._q["commit"])
                return done
            except psycopg.Error as exc:
                raise self._error(self._target, exc, conn) from exc

    # ------------------------------------------------------------------ archiving

    async def archive(self, statuses: Collection[TaskStatus], *, now: dt.datetime, batch: int = 200) -> int:
        moved = 0
        for status in (status for status in statuses if status in STATUS_CODES):  # the ended ones
            after = (await self._newest_day(status), -(2**62), "")
            while True:
                count, last = await self._transaction(self._archive_batch, status, after, now, batch)
                moved += count
                if last is None:
                    break
                after = last
        return moved

    async def _newest_day(self, status: TaskStatus) -> int:
        """Where a pass starts: the start of the newest day archived of `status` (the start of time if
        none). A task that ended before it and is not archived (a live lease held it then) stays
        live, and is deleted as a row once its day expires (`delete_expired`)."""
        async with self._pool().connection() as conn:
            try:
                cursor = await conn.execute(self._q["history_newest_archive"], {"code": STATUS_CODES[status]})
                row = await cursor.fetchone()
            except psycopg.Error as exc:
                raise self._error(self._target, exc, conn) from exc
        return -(2**62) if row is None else (row[0] // 4) * _MICROS_A_DAY

    async def _archive_batch(
        self,
        conn: psycopg.AsyncConnection[Any],
        status: TaskStatus,
        after: tuple[int, int, str],
        now: dt.datetime,
        batch: int,
    ) -> tuple[int, tuple[int, int, str] | None]:
        """Archive the next `batch` tasks of `status` after `after`; return how many, and where to go on."""
        params = {
            "status": str(status),
            "after_updated": after[0],
            "after_created": after[1],
            "after_id": after[2],
            "now": rows.to_micros(now),
            "limit": batch,
        }
        found = await (await conn.execute(self._q["history_to_archive"], params)).fetchall()
        if not found:
            return 0, None
        ids = [task_id for task_id, _, _ in found]
        archives = [archive_of(ended, status) for _, ended, _ in found]
        for archive in sorted(set(archives)):
            await self._ensure_partition(conn, archive)
        moving = {"ids": ids, "archives": archives}
        await conn.execute(self._q["history_lock_events"], {"ids": ids})
        await conn.execute(self._q["history_archive_tasks"], moving)
        await conn.execute(self._q["history_move_operations"], moving)
        await conn.execute(self._q["history_move_events"], moving)
        last = found[-1]
        return len(ids), ((last[1], last[2], last[0]) if len(found) == batch else None)

    async def _ensure_partition(self, conn: psycopg.AsyncConnection[Any], archive: int) -> None:
        for table in TABLES:
            name = partition_name(table, archive)
            cursor = await conn.execute(self._q["history_partition_exists"], {"name": name})
            exists = await cursor.fetchone()
            if exists is not None and exists[0]:
                continue
            names = {"table": sql.Identifier(table), "partition": sql.Identifier(name)}
            await conn.execute(sql.SQL(self._q["history_create_partition"]).format(**names))
            bounds = {"low": sql.Literal(archive), "high": sql.Literal(archive + 1)}
            await conn.execute(sql.SQL(self._q["history_attach_partition"]).format(**names, **bounds))

    # ------------------------------------------------------------------ dropping

    async def days(self) -> list[ArchivedDay]:
        async with self._pool().connection() as conn:
            try:
                return [
                    ArchivedDay(_day_of(archive), _STATUSES[archive % 4], await self._count(conn, archive))
                    for archive in await self._archives(conn)
                ]
            except psycopg.Error as exc:
                raise self._error(self._target, exc, conn) from exc

    async def _archives(self, conn: psycopg.AsyncConnection[Any]) -> list[int]:
        names = await (await conn.execute(self._q["history_partitions"])).fetchall()
        return sorted(archive for (name,) in names if (archive := _archive_named(name)) is not None)

    async def _count(self, conn: psycopg.AsyncConnection[Any], archive: int) -> int:
        row = await (await conn.execute(self._q["history_count_in"], {"archive": archive})).fetchone()
        return int(row[0]) if row else 0

    async def drop_expired(self, cutoffs: Mapping[TaskStatus, dt.datetime]) -> dict[TaskStatus, int]:
        dropped = dict.fromkeys(cutoffs, 0)
        async with self._pool().connection() as conn:
            try:
                archives = await self._archives(conn)
            except psycopg.Error as exc:
                raise self._error(self._target, exc, conn) from exc
        for archive in archives:
            status = _STATUSES[archive % 4]
            cutoff = cutoffs.get(status)
            if cutoff is None or rows.to_micros(cutoff) < (archive // 4 + 1) * _MICROS_A_DAY:
                continue  # no rule, or some of its day is not expired yet
            try:
                dropped[status] += await self._transaction(self._drop, archive)
            except Exception as exc:
                cause = exc.__cause__
                if not (isinstance(cause, psycopg.Error) and cause.sqlstate == _LOCK_NOT_AVAILABLE):
                    raise  # a lock not had in time: the next pass tries again
        return dropped

    async def _drop(self, conn: psycopg.AsyncConnection[Any], archive: int) -> int:
        """Drop the partitions of `archive` and the rest of its tasks; 0 when one of them must stay."""
        await conn.execute(self._q["history_lock_timeout"])
        found = await (await conn.execute(self._q["history_tasks_in"], {"archive": archive})).fetchall()
        ids = [task_id for (task_id,) in found]
        kept = await (await conn.execute(self._q["history_kept_parent"], {"ids": ids})).fetchone()
        if kept is not None:
            return 0
        await conn.execute(self._q["history_delete_tasks"], {"ids": ids})
        for table in TABLES:
            names = {"partition": sql.Identifier(partition_name(table, archive))}
            await conn.execute(sql.SQL(self._q["history_drop_partition"]).format(**names))
        return len(ids)

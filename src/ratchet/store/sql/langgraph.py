"""LangGraph's checkpoints (`LangGraphOps`) in every SQL store, as part of `SqlOps`.

A value that extends another is inserted only if that one is stored, in the
same statement, so a checkpoint never names a chain with a missing link. A
task's pending writes on a checkpoint are one packed blob (langgraph_write_rows.py):
written at once the first time, read (locked), merged and rewritten when the
task writes there again; they keep the task path of its latest change
(LangGraph derives a task's id from its path, so they do not differ).
A step is one row: the first task to write on a stored checkpoint (a step's
one task, most often) puts its writes in the checkpoint's row (``task_id``,
``task_path``, ``task_writes``, ``write_hashes``); any other task's, or those on
a checkpoint not stored, are a row of ``langgraph_writes``. A task's writes
are in one place or the other, never both: the row is taken only by a task
with no row in ``langgraph_writes``.
The metadata is stored as bytes, deflated when that is shorter (langgraph_deflate.py).
After checkpoints are deleted, one statement per thread drops the values that
no remaining checkpoint of the thread reaches (``collect_langgraph_values``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from ...errors import ConflictError
from ...records import LangGraphCheckpoint, LangGraphValue, LangGraphWrite
from ..ops.langgraph import LangGraphOps
from .driver import Driver, Row
from .langgraph_deflate import METADATA, deflate, inflate
from .langgraph_ids import id_key, id_text
from .langgraph_write_rows import merge_writes, pack_writes, unpack_writes

__all__ = ["SqlLangGraph"]


def _checkpoint(row: Row) -> LangGraphCheckpoint:
    thread_id, ns, checkpoint_id, parent_id, run_id, type_, body, metadata, values = row
    parent = None if parent_id is None else id_text(bytes(parent_id))
    # Text in SQLite rows stored before the fifth pass; bytes, deflated or not, since.
    described = metadata if isinstance(metadata, str) else inflate(bytes(metadata), METADATA).decode()
    return LangGraphCheckpoint(
        thread_id, ns, id_text(bytes(checkpoint_id)), parent, run_id, type_, bytes(body), described, values
    )


def _value_params(value: LangGraphValue) -> dict[str, Any]:
    return {
        "thread_id": value.thread_id,
        "hash": value.hash,
        "prev": value.prev,
        "items": value.items,
        "type": value.type,
        "body": value.body,
    }


class SqlLangGraph(LangGraphOps):
    """`LangGraphOps` over a driver; `SqlOps` supplies the driver."""

    _d: Driver

    async def _put_values(self, values: Sequence[LangGraphValue]) -> None:
        whole = [_value_params(value) for value in values if value.prev is None]
        if whole:
            await self._d.execute_many("put_langgraph_value", whole)
        for value in values:
            if value.prev is None:
                continue
            params = _value_params(value)
            if await self._d.execute("put_langgraph_value_after", params):
                continue
            if await self._d.one("has_langgraph_value", params) is None:
                raise ConflictError(f"value {value.prev} of thread {value.thread_id} is no longer stored")

    async def put_langgraph_checkpoint(
        self, checkpoint: LangGraphCheckpoint, values: Sequence[LangGraphValue]
    ) -> None:
        await self._put_values(values)
        await self._d.execute(
            "put_langgraph_checkpoint",
            {
                "thread_id": checkpoint.thread_id,
                "ns": checkpoint.ns,
                "checkpoint_id": id_key(checkpoint.checkpoint_id),
                "parent_id": None if checkpoint.parent_id is None else id_key(checkpoint.parent_id),
                "run_id": checkpoint.run_id,
                "type": checkpoint.type,
                "body": checkpoint.body,
                "metadata": deflate(checkpoint.metadata.encode(), METADATA),
                "values": checkpoint.values,
            },
        )

    async def get_langgraph_checkpoint(
        self, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> LangGraphCheckpoint | None:
        key = None if checkpoint_id is None else id_key(checkpoint_id)
        params = {"thread_id": thread_id, "ns": ns, "checkpoint_id": key}
        name = "get_langgraph_checkpoint" if checkpoint_id is not None else "latest_langgraph_checkpoint"
        row = await self._d.one(name, params)
        return None if row is None else _checkpoint(row)

    async def list_langgraph_checkpoints(
        self,
        thread_id: str | None,
        ns: str | None,
        *,
        before: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> list[LangGraphCheckpoint]:
        params = {
            "thread_id": thread_id,
            "ns": ns,
            "before": None if before is None else id_key(before),
            "limit": limit,
            "offset": offset,
        }
        name = "list_langgraph_checkpoints" if thread_id is not None else "list_all_langgraph_checkpoints"
        return [_checkpoint(row) for row in await self._d.all(name, params)]

    async def get_langgraph_values(self, thread_id: str, hashes: Collection[str]) -> list[LangGraphValue]:
        params = {"thread_id": thread_id, "hashes": json.dumps(sorted(hashes))}
        return [
            LangGraphValue(thread_id, digest, prev, type_, bytes(body), items)
            for digest, prev, items, type_, body in await self._d.all("get_langgraph_values", params)
        ]

    async def put_langgraph_writes(
        self, writes: Sequence[LangGraphWrite], values: Sequence[LangGraphValue] = ()
    ) -> None:
        await self._put_values(values)
        tasks: dict[tuple[str, str, str, str], list[LangGraphWrite]] = {}
        for write in writes:
            tasks.setdefault((write.thread_id, write.ns, write.checkpoint_id, write.task_id), []).append(
                write
            )
        for (thread_id, ns, checkpoint_id, task_id), new in tasks.items():
            key = {
                "thread_id": thread_id,
                "ns": ns,
                "checkpoint_id": id_key(checkpoint_id),
                "task_id": id_key(task_id),
            }
            merged = merge_writes([], new)
            path, packed, hashes = pack_writes(merged, merged[-1].task_path)
            row = {**key, "task_path": path, "writes": packed, "value_hashes": hashes}
            if await self._d.execute("claim_langgraph_checkpoint_writes", row):
                continue  # in the checkpoint's row
            # The task wrote in the checkpoint's row before: that, locked; else its own row.
            where = "checkpoint"
            stored = await self._d.one("get_langgraph_checkpoint_writes", key)
            if stored is None:
                where = "task"
                if await self._d.execute("put_langgraph_task_writes", row):
                    continue
                stored = await self._d.one("get_langgraph_task_writes", key)
            if stored is None:  # deleted by another transaction since the insert met it
                raise ConflictError(f"the writes of task {task_id} changed meanwhile; put them again")
            task_path, blob, value_hashes = stored
            old = unpack_writes(thread_id, ns, checkpoint_id, task_id, task_path, bytes(blob), value_hashes)
            merged = merge_writes(old, new)
            if merged == old:
                continue
            replaced = any(write.idx < 0 for write in new)
            kept = old[0].task_path if old else task_path
            path, packed, hashes = pack_writes(merged, new[-1].task_path if replaced else kept)
            await self._d.execute(
                f"update_langgraph_{where}_writes",
                {**key, "task_path": path, "writes": packed, "value_hashes": hashes},
            )

    async def list_langgraph_writes(
        self, thread_id: str, ns: str, checkpoint_ids: Collection[str]
    ) -> list[LangGraphWrite]:
        # The writes of every checkpoint between the first and the last asked for (those of a page
        # of a listing: few others), then those asked for.
        wanted = {id_key(checkpoint_id) for checkpoint_id in checkpoint_ids}
        if not wanted:
            return []
        params = {"thread_id": thread_id, "ns": ns, "low": min(wanted), "high": max(wanted)}
        found = []
        for _, _, checkpoint_key, task_key, task_path, blob, hashes in await self._d.all(
            "list_langgraph_writes", params
        ):
            if bytes(checkpoint_key) not in wanted:
                continue
            checkpoint_id, task_id = id_text(bytes(checkpoint_key)), id_text(bytes(task_key))
            found += unpack_writes(thread_id, ns, checkpoint_id, task_id, task_path, bytes(blob), hashes)
        return found

    async def delete_langgraph_thread(self, thread_id: str) -> None:
        for table in ("writes", "checkpoints", "values"):
            await self._d.execute(f"delete_langgraph_thread_{table}", {"thread_id": thread_id})

    async def delete_langgraph_runs(self, run_ids: Collection[str]) -> None:
        if not run_ids:
            return
        params = {"runs": json.dumps(sorted(run_ids))}
        threads = [row[0] for row in await self._d.all("langgraph_threads_of_runs", params)]
        await self._d.execute("delete_langgraph_run_writes", params)
        await self._d.execute("delete_langgraph_run_checkpoints", params)
        for thread_id in threads:
            await self._d.execute("collect_langgraph_values", {"thread_id": thread_id})

    async def copy_langgraph_thread(self, source: str, target: str) -> None:
        for rows in ("checkpoints", "writes", "checkpoint_writes", "values"):
            await self._d.execute(f"copy_langgraph_{rows}", {"source": source, "target": target})

    async def prune_langgraph_threads(self, thread_ids: Collection[str], *, keep_latest: bool) -> None:
        for thread_id in thread_ids:
            if not keep_latest:
                await self.delete_langgraph_thread(thread_id)
                continue
            await self._d.execute("prune_langgraph_writes", {"thread_id": thread_id})
            await self._d.execute("prune_langgraph_checkpoints", {"thread_id": thread_id})
            await self._d.execute("collect_langgraph_values", {"thread_id": thread_id})

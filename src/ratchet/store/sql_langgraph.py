"""LangGraph's checkpoints (`LangGraphOps`) in every SQL store, as part of `SqlOps`.

A value that extends another is inserted only if that one is stored, in the
same statement, so a checkpoint never names a chain with a missing link.
After checkpoints are deleted, one statement per thread drops the values that
no remaining checkpoint of the thread reaches (``collect_langgraph_values``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from ..errors import ConflictError
from ..langgraph_rows import LangGraphCheckpoint, LangGraphValue, LangGraphWrite
from .driver import Driver, Row
from .langgraph_ops import LangGraphOps

__all__ = ["SqlLangGraph"]


def _checkpoint(row: Row) -> LangGraphCheckpoint:
    thread_id, ns, checkpoint_id, parent_id, run_id, type_, body, metadata, values = row
    return LangGraphCheckpoint(
        thread_id, ns, checkpoint_id, parent_id, run_id, type_, bytes(body), metadata, values
    )


def _write(row: Row) -> LangGraphWrite:
    thread_id, ns, checkpoint_id, task_id, idx, channel, type_, value, task_path, value_hash = row
    return LangGraphWrite(
        thread_id, ns, checkpoint_id, task_id, idx, channel, type_, bytes(value), task_path, value_hash
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
                "checkpoint_id": checkpoint.checkpoint_id,
                "parent_id": checkpoint.parent_id,
                "run_id": checkpoint.run_id,
                "type": checkpoint.type,
                "body": checkpoint.body,
                "metadata": checkpoint.metadata,
                "values": checkpoint.values,
            },
        )

    async def get_langgraph_checkpoint(
        self, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> LangGraphCheckpoint | None:
        params = {"thread_id": thread_id, "ns": ns, "checkpoint_id": checkpoint_id}
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
        params = {"thread_id": thread_id, "ns": ns, "before": before, "limit": limit, "offset": offset}
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
        for name, special in (("put_langgraph_write", False), ("replace_langgraph_write", True)):
            params = [
                {
                    "thread_id": write.thread_id,
                    "ns": write.ns,
                    "checkpoint_id": write.checkpoint_id,
                    "task_id": write.task_id,
                    "idx": write.idx,
                    "channel": write.channel,
                    "type": write.type,
                    "value": write.value,
                    "value_hash": write.value_hash,
                    "task_path": write.task_path,
                }
                for write in writes
                if (write.idx < 0) == special
            ]
            if params:
                await self._d.execute_many(name, params)

    async def list_langgraph_writes(
        self, thread_id: str, ns: str, checkpoint_ids: Collection[str]
    ) -> list[LangGraphWrite]:
        params = {"thread_id": thread_id, "ns": ns, "ids": json.dumps(sorted(checkpoint_ids))}
        return [_write(row) for row in await self._d.all("list_langgraph_writes", params)]

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
        for table in ("checkpoints", "writes", "values"):
            await self._d.execute(f"copy_langgraph_{table}", {"source": source, "target": target})

    async def prune_langgraph_threads(self, thread_ids: Collection[str], *, keep_latest: bool) -> None:
        for thread_id in thread_ids:
            if not keep_latest:
                await self.delete_langgraph_thread(thread_id)
                continue
            await self._d.execute("prune_langgraph_writes", {"thread_id": thread_id})
            await self._d.execute("prune_langgraph_checkpoints", {"thread_id": thread_id})
            await self._d.execute("collect_langgraph_values", {"thread_id": thread_id})

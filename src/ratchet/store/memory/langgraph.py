"""LangGraph's checkpoints (`LangGraphOps`) in the memory store, as part of its operations."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Sequence
from typing import Any, TypeVar

from ...errors import ConflictError
from ...records import LangGraphCheckpoint, LangGraphValue, LangGraphWrite
from ..ops.langgraph import LangGraphOps
from .undo import UndoLog

__all__ = ["MemoryLangGraph"]

_CheckpointKey = tuple[str, str]  # namespace, checkpoint id
_WriteKey = tuple[str, str, str, int]  # namespace, checkpoint id, task id, index
_K = TypeVar("_K")
_R = TypeVar("_R")


class MemoryLangGraph(LangGraphOps, UndoLog):
    """Per thread: its checkpoints, writes and values (frozen records, changed through `UndoLog`)."""

    def __init__(self) -> None:
        super().__init__()
        self.lg_checkpoints: dict[str, dict[_CheckpointKey, LangGraphCheckpoint]] = {}
        self.lg_writes: dict[str, dict[_WriteKey, LangGraphWrite]] = {}
        self.lg_values: dict[str, dict[str, LangGraphValue]] = {}

    def _thread(self, table: dict[str, dict[_K, _R]], thread_id: str) -> dict[_K, _R]:
        if thread_id not in table:
            self._set(table, thread_id, {})
        return table[thread_id]

    def _put_values(self, values: Sequence[LangGraphValue]) -> None:
        for value in values:
            stored = self._thread(self.lg_values, value.thread_id)
            if value.hash in stored:
                continue
            if value.prev is not None and value.prev not in stored:
                raise ConflictError(f"value {value.prev} of thread {value.thread_id} is no longer stored")
            self._set(stored, value.hash, value)

    async def put_langgraph_checkpoint(
        self, checkpoint: LangGraphCheckpoint, values: Sequence[LangGraphValue]
    ) -> None:
        self._put_values(values)
        key = (checkpoint.ns, checkpoint.checkpoint_id)
        self._set(self._thread(self.lg_checkpoints, checkpoint.thread_id), key, checkpoint)

    async def get_langgraph_checkpoint(
        self, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> LangGraphCheckpoint | None:
        checkpoints = self.lg_checkpoints.get(thread_id, {})
        if checkpoint_id is not None:
            return checkpoints.get((ns, checkpoint_id))
        ids = [key[1] for key in checkpoints if key[0] == ns]
        return checkpoints[(ns, max(ids))] if ids else None

    async def list_langgraph_checkpoints(
        self,
        thread_id: str | None,
        ns: str | None,
        *,
        before: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> list[LangGraphCheckpoint]:
        threads = [thread_id] if thread_id is not None else list(self.lg_checkpoints)
        found = [
            checkpoint
            for thread in threads
            for checkpoint in self.lg_checkpoints.get(thread, {}).values()
            if (ns is None or checkpoint.ns == ns) and (before is None or checkpoint.checkpoint_id < before)
        ]
        found.sort(key=lambda c: (c.thread_id, c.ns))
        found.sort(key=lambda c: c.checkpoint_id, reverse=True)
        return found[offset : offset + limit]

    async def get_langgraph_values(self, thread_id: str, hashes: Collection[str]) -> list[LangGraphValue]:
        return self._reached(thread_id, hashes)

    async def put_langgraph_writes(
        self, writes: Sequence[LangGraphWrite], values: Sequence[LangGraphValue] = ()
    ) -> None:
        self._put_values(values)
        for write in writes:
            stored = self._thread(self.lg_writes, write.thread_id)
            key = (write.ns, write.checkpoint_id, write.task_id, write.idx)
            if write.idx >= 0 and key in stored:
                continue
            self._set(stored, key, write)

    async def list_langgraph_writes(
        self, thread_id: str, ns: str, checkpoint_ids: Collection[str]
    ) -> list[LangGraphWrite]:
        wanted = set(checkpoint_ids)
        return [
            write
            for key, write in self.lg_writes.get(thread_id, {}).items()
            if key[0] == ns and key[1] in wanted
        ]

    async def delete_langgraph_thread(self, thread_id: str) -> None:
        for table in (self.lg_checkpoints, self.lg_writes, self.lg_values):
            self._delete(table, thread_id)

    async def delete_langgraph_runs(self, run_ids: Collection[str]) -> None:
        runs = set(run_ids)
        for thread_id, checkpoints in list(self.lg_checkpoints.items()):
            gone = {key for key, checkpoint in checkpoints.items() if checkpoint.run_id in runs}
            if gone:
                writes = [key for key in self.lg_writes.get(thread_id, {}) if (key[0], key[1]) in gone]
                self._drop(thread_id, gone, writes)

    async def copy_langgraph_thread(self, source: str, target: str) -> None:
        self._copy(self.lg_checkpoints, source, target)
        self._copy(self.lg_writes, source, target)
        self._copy(self.lg_values, source, target)

    def _copy(self, table: dict[str, dict[_K, Any]], source: str, target: str) -> None:
        rows = table.get(source)
        if not rows:
            return
        copied = self._thread(table, target)
        for key, row in rows.items():
            if key not in copied:
                self._set(copied, key, dataclasses.replace(row, thread_id=target))

    async def prune_langgraph_threads(self, thread_ids: Collection[str], *, keep_latest: bool) -> None:
        for thread_id in thread_ids:
            if not keep_latest:
                await self.delete_langgraph_thread(thread_id)
                continue
            latest: dict[str, str] = {}
            for ns, checkpoint_id in self.lg_checkpoints.get(thread_id, {}):
                latest[ns] = max(latest.get(ns, checkpoint_id), checkpoint_id)
            doomed = [key for key in self.lg_checkpoints.get(thread_id, {}) if latest[key[0]] != key[1]]
            # Every write but those of each namespace's latest checkpoint, as the SQL stores do.
            writes = [key for key in self.lg_writes.get(thread_id, {}) if latest.get(key[0]) != key[1]]
            self._drop(thread_id, doomed, writes)

    def _drop(
        self, thread_id: str, doomed: Collection[_CheckpointKey], writes: Collection[_WriteKey]
    ) -> None:
        """Delete those checkpoints and writes of the thread, and the values no checkpoint reaches then."""
        checkpoints = self.lg_checkpoints.get(thread_id, {})
        for key in doomed:
            self._delete(checkpoints, key)
        stored = self.lg_writes.get(thread_id, {})
        for write_key in writes:
            self._delete(stored, write_key)
        values = self.lg_values.get(thread_id, {})
        named = [
            digest for checkpoint in checkpoints.values() for digest in checkpoint.value_hashes().values()
        ]
        named += [write.value_hash for write in stored.values() if write.value_hash is not None]
        reached = {value.hash for value in self._reached(thread_id, named)}
        for digest in [digest for digest in values if digest not in reached]:
            self._delete(values, digest)

    def _reached(self, thread_id: str, hashes: Iterable[str]) -> list[LangGraphValue]:
        """The thread's values of those hashes, and every value each extends or takes its items from."""
        stored = self.lg_values.get(thread_id, {})
        found: dict[str, LangGraphValue] = {}
        wanted = list(hashes)
        while wanted:
            digest = wanted.pop()
            value = stored.get(digest)
            if value is None or digest in found:
                continue
            found[digest] = value
            wanted += [link for link in (value.prev, value.items) if link is not None]
        return list(found.values())

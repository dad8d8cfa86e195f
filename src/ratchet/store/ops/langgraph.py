"""`LangGraphOps`: the store operations of LangGraph's checkpoints (ratchet.records.langgraph).

Part of `StoreOps` (store.py); the memory store (store/memory/langgraph.py) and
every SQL store (store/sql/langgraph.py) implement them with the behaviour written here.
The checkpointer (ratchet.integrations.langgraph) decides what to store; the
store keeps the rows, reads a value with every value it extends, and keeps a
thread free of values no checkpoint reaches: after deleting or pruning
checkpoints it drops every value of the thread that no remaining checkpoint
or pending write names, directly or through the values those extend or take
their items from.
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Sequence

from ...records import LangGraphCheckpoint, LangGraphValue, LangGraphWrite

__all__ = ["LangGraphOps"]


class LangGraphOps(abc.ABC):
    """LangGraph's checkpoints, their pending writes and their channel values."""

    @abc.abstractmethod
    async def put_langgraph_checkpoint(
        self, checkpoint: LangGraphCheckpoint, values: Sequence[LangGraphValue]
    ) -> None:
        """Store `values` (each hash once per thread), then `checkpoint` (replacing one of its id).

        Raises:
            ConflictError: a value extends one the thread no longer holds (a
                thread deleted or pruned meanwhile); nothing was written: store
                that value whole.
        """

    @abc.abstractmethod
    async def get_langgraph_checkpoint(
        self, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> LangGraphCheckpoint | None:
        """The checkpoint of that id, or the namespace's latest (None: no such checkpoint)."""

    @abc.abstractmethod
    async def list_langgraph_checkpoints(
        self,
        thread_id: str | None,
        ns: str | None,
        *,
        before: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> list[LangGraphCheckpoint]:
        """Checkpoints newest first: of a thread (None: every thread), of a namespace (None: every one).

        `before` keeps only checkpoints whose id sorts before it; `offset` and
        `limit` page the result.
        """

    @abc.abstractmethod
    async def get_langgraph_values(self, thread_id: str, hashes: Collection[str]) -> list[LangGraphValue]:
        """The thread's values of those hashes, and every value each extends or takes its items
        from, in no order."""

    @abc.abstractmethod
    async def put_langgraph_writes(
        self, writes: Sequence[LangGraphWrite], values: Sequence[LangGraphValue] = ()
    ) -> None:
        """Store `values` (each hash once per thread: the values of writes that name one), then pending
        writes: one already stored under the same key is kept, but a special one (negative `idx`)
        is replaced."""

    @abc.abstractmethod
    async def list_langgraph_writes(
        self, thread_id: str, ns: str, checkpoint_ids: Collection[str]
    ) -> list[LangGraphWrite]:
        """The pending writes of those checkpoints, in no order."""

    @abc.abstractmethod
    async def delete_langgraph_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and value of the thread (nothing happens for an unknown one)."""

    @abc.abstractmethod
    async def delete_langgraph_runs(self, run_ids: Collection[str]) -> None:
        """Delete the checkpoints those runs made, their writes, and the values left unreached."""

    @abc.abstractmethod
    async def copy_langgraph_thread(self, source: str, target: str) -> None:
        """Copy every checkpoint, write and value of `source` to `target` (rows it has are kept)."""

    @abc.abstractmethod
    async def prune_langgraph_threads(self, thread_ids: Collection[str], *, keep_latest: bool) -> None:
        """Delete the threads' checkpoints, but each namespace's latest if `keep_latest`, with their
        writes and the values left unreached."""

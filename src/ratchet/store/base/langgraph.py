"""`LangGraphWrappers`: LangGraph's checkpoints (`LangGraphOps`) in `StateStore`, a transaction each.

What each does is documented on `LangGraphOps` (store/ops/langgraph.py). Only
the two puts take a keyword ``fence=lease``: LangGraph's checkpointer
deletes, copies and prunes whole threads, not a step of a run.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ...records import LangGraphCheckpoint, LangGraphValue, LangGraphWrite, Lease
from ..ops.langgraph import LangGraphOps
from .wrapping import OwnTransactions

__all__ = ["LangGraphWrappers"]


class LangGraphWrappers(LangGraphOps, OwnTransactions):
    """LangGraph's checkpoints, writes and values, each operation in a transaction of its own."""

    async def put_langgraph_checkpoint(
        self, checkpoint: LangGraphCheckpoint, values: Sequence[LangGraphValue], *, fence: Lease | None = None
    ) -> None:
        return await self._write(fence, lambda tx: tx.put_langgraph_checkpoint(checkpoint, values))

    async def get_langgraph_checkpoint(
        self, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> LangGraphCheckpoint | None:
        return await self._read(lambda tx: tx.get_langgraph_checkpoint(thread_id, ns, checkpoint_id))

    async def list_langgraph_checkpoints(
        self,
        thread_id: str | None,
        ns: str | None,
        *,
        before: str | None = None,
        limit: int,
        offset: int = 0,
    ) -> list[LangGraphCheckpoint]:
        return await self._read(
            lambda tx: tx.list_langgraph_checkpoints(thread_id, ns, before=before, limit=limit, offset=offset)
        )

    async def get_langgraph_values(self, thread_id: str, hashes: Collection[str]) -> list[LangGraphValue]:
        return await self._read(lambda tx: tx.get_langgraph_values(thread_id, hashes))

    async def put_langgraph_writes(
        self,
        writes: Sequence[LangGraphWrite],
        values: Sequence[LangGraphValue] = (),
        *,
        fence: Lease | None = None,
    ) -> None:
        return await self._write(fence, lambda tx: tx.put_langgraph_writes(writes, values))

    async def list_langgraph_writes(
        self, thread_id: str, ns: str, checkpoint_ids: Collection[str]
    ) -> list[LangGraphWrite]:
        return await self._read(lambda tx: tx.list_langgraph_writes(thread_id, ns, checkpoint_ids))

    async def delete_langgraph_thread(self, thread_id: str) -> None:
        return await self._write(None, lambda tx: tx.delete_langgraph_thread(thread_id))

    async def delete_langgraph_runs(self, run_ids: Collection[str]) -> None:
        return await self._write(None, lambda tx: tx.delete_langgraph_runs(run_ids))

    async def copy_langgraph_thread(self, source: str, target: str) -> None:
        return await self._write(None, lambda tx: tx.copy_langgraph_thread(source, target))

    async def prune_langgraph_threads(self, thread_ids: Collection[str], *, keep_latest: bool) -> None:
        return await self._write(
            None, lambda tx: tx.prune_langgraph_threads(thread_ids, keep_latest=keep_latest)
        )

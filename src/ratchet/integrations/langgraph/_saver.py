"""`RatchetSaver`: LangGraph's checkpointer on any Ratchet store (memory, SQLite, PostgreSQL).

Every method is written once, async, run in the loop the store lives in
(`LoopBridge`); the sync methods wait for the same coroutines. The channel
values go through `ChannelValues` (_values.py): each stored once per thread,
a growing list as the items it adds. Each thread is also a Ratchet task
(`ThreadTasks`, _thread_tasks.py), unless ``tasks=False``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator, Collection, Iterator, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, NamedTuple, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ...errors import ConflictError, CorruptRecord
from ...records import LangGraphCheckpoint, LangGraphValue, LangGraphWrite, Lease
from ...store import StateStore, open_store
from ...store.ops import StoreOps
from ._bridge import LoopBridge
from ._fence import ThreadFence
from ._packing import pack, read_ts, stored_ts, unpack
from ._thread_tasks import ThreadTasks
from ._values import SHARED, ChannelValues

__all__ = ["RatchetSaver"]

_PAGE = 100  # checkpoints read per query while listing
_STRATEGIES = ("keep_latest", "delete")


def _where(config: RunnableConfig) -> tuple[str, str, str | None]:
    """The thread, namespace and checkpoint id a config names."""
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None:
        raise ValueError("a RatchetSaver config needs configurable.thread_id")
    return str(thread_id), str(configurable.get("checkpoint_ns") or ""), configurable.get("checkpoint_id")


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


class _Fetched(NamedTuple):
    """Checkpoint rows, the values they name (by thread, then hash) and their writes (by thread,
    namespace, then checkpoint id), read in one transaction."""

    rows: Sequence[LangGraphCheckpoint]
    values: dict[str, dict[str, LangGraphValue]]
    writes: dict[tuple[str, str], dict[str, list[LangGraphWrite]]]


async def _fetch(tx: StoreOps, rows: Sequence[LangGraphCheckpoint]) -> _Fetched:
    """What the tuples of `rows` need: one query per namespace for writes, per thread for values."""
    values: dict[str, dict[str, LangGraphValue]] = {}
    writes: dict[tuple[str, str], dict[str, list[LangGraphWrite]]] = {}
    named: dict[str, set[str]] = {}
    for row in rows:
        named.setdefault(row.thread_id, set()).update(row.value_hashes().values())
    for thread_id, ns in {(row.thread_id, row.ns) for row in rows}:
        ids = [row.checkpoint_id for row in rows if (row.thread_id, row.ns) == (thread_id, ns)]
        by_checkpoint: dict[str, list[LangGraphWrite]] = {}
        for write in await tx.list_langgraph_writes(thread_id, ns, ids):
            by_checkpoint.setdefault(write.checkpoint_id, []).append(write)
            if write.value_hash is not None:
                named[thread_id].add(write.value_hash)
        writes[(thread_id, ns)] = by_checkpoint
    for thread_id, hashes in named.items():
        found = await tx.get_langgraph_values(thread_id, hashes) if hashes else []
        values[thread_id] = {value.hash: value for value in found}
    return _Fetched(rows, values, writes)


class RatchetSaver(BaseCheckpointSaver[Any]):  # versions: int, or str on a thread another saver began
    """A LangGraph checkpointer whose checkpoints live in a Ratchet store.

    Open it the LangGraph way, from a store URL::

        async with RatchetSaver.from_conn_string("sqlite:///graph.db") as saver:
            graph = builder.compile(checkpointer=saver)
            await graph.ainvoke(inputs, {"configurable": {"thread_id": "t1"}})

        with RatchetSaver.from_conn_string("postgresql://...") as saver:  # a sync program
            graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

    Args:
        store: an open store, used in the event loop running when the saver is made.
        serde: LangGraph's serializer for the values (its default when None).
        max_chain: how many versions of a growing list may be stored as their
            new items before one is stored whole again (or as many as the
            whole copy has items, if more): bounds the rows a read fetches.
        fence: take a lease on each thread before writing it, and write with
            it (_fence.py): a second saver writing the same thread at the same
            time is refused (`ConflictError`) instead of forking its checkpoints.
        fence_ttl: seconds a fenced saver's lease outlives its last write
            (and a thread task's lease, fenced or not).
        graph: where a worker finds the graph, ``"module:attribute"`` (or
            ``"file.py:attribute"``): a `StateGraph`, a compiled graph, or a
            function of no arguments that returns one. It lets ``ratchet
            answer`` resume the thread's interrupts (docs/integrations.md).
        tasks: keep each thread as a Ratchet task (``langgraph:<thread id>``)
            that ``ratchet tasks``, the HTTP API and the dashboard show.
        bridge: the loop the store lives in (the running one when None).
    """

    def __init__(
        self,
        store: StateStore,
        *,
        serde: SerializerProtocol | None = None,
        max_chain: int = 4096,
        fence: bool = False,
        fence_ttl: float = 60.0,
        graph: str | None = None,
        tasks: bool = True,
        bridge: LoopBridge | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if graph is not None and not _is_reference(graph):
            raise ValueError(f"graph={graph!r}: name it as 'module:attribute' or 'file.py:attribute'")
        self.store = store
        self.graph = graph
        self._bridge = bridge if bridge is not None else LoopBridge(_running_loop())
        self._values = ChannelValues(self.serde, max_chain=max_chain)
        leases = ThreadFence(store, fence_ttl) if fence or tasks else None
        self._fence = leases if fence else None
        self._leases = leases
        self._tasks = None if leases is None or not tasks else ThreadTasks(store, leases, graph, fenced=fence)

    @classmethod
    def from_conn_string(
        cls,
        url: str,
        *,
        max_chain: int = 4096,
        fence: bool = False,
        fence_ttl: float = 60.0,
        graph: str | None = None,
        tasks: bool = True,
    ) -> _Opening:
        """Open a saver on the store `url` names: ``async with`` in async code, ``with`` in sync code.

        ``with`` runs the store in an event loop of its own, in a thread. On
        exit the saver releases its leases (``fence=True``) and closes the store.
        """
        options = {
            "max_chain": max_chain,
            "fence": fence,
            "fence_ttl": fence_ttl,
            "graph": graph,
            "tasks": tasks,
        }
        return _Opening(cls, url, options)

    async def arelease(self) -> None:
        """Release the leases the saver holds on threads (``from_conn_string`` does it on exit); a
        thread it still runs waits for input (`ThreadTasks.stop`): its program stopped the run."""
        if self._tasks is not None:
            await self._bridge.run(self._tasks.stop)
        if self._leases is not None:
            await self._bridge.run(self._leases.release)

    async def _lease(self, thread_id: str) -> Lease | None:
        return None if self._fence is None else await self._fence.lease(thread_id)

    # ------------------------------------------------------------------ reading

    async def _get(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns, checkpoint_id = _where(config)
        async with self.store.reading() as tx:  # one snapshot: no prune between the rows read
            row = await tx.get_langgraph_checkpoint(thread_id, ns, checkpoint_id)
            if row is None:
                return None
            fetched = await _fetch(tx, [row])
        return self._tuples(fetched, remember=True)[0]  # deserialized once the transaction has ended

    def _tuples(self, fetched: _Fetched, *, remember: bool = False) -> list[CheckpointTuple]:
        """The tuples of fetched checkpoint rows."""
        rows, values, writes = fetched
        tuples = []
        for row in rows:
            checkpoint: Checkpoint = self.serde.loads_typed(unpack(row.type, row.body))
            checkpoint["id"] = row.checkpoint_id  # the row's key, not stored twice in the body
            if "ts" in checkpoint:
                checkpoint["ts"] = read_ts(checkpoint["ts"])
            inline = checkpoint.get("channel_values") or {}  # the small values (none in older rows)
            versions = checkpoint["channel_versions"]
            where = f"checkpoint {row.checkpoint_id} of thread {row.thread_id!r}"
            found = values[row.thread_id]
            channel_values, known = self._values.decode(row.value_hashes(), versions, found, where=where)
            channel_values.update(inline)
            if remember:
                self._values.remember(row.thread_id, row.ns, known)
            pending = sorted(
                writes[(row.thread_id, row.ns)].get(row.checkpoint_id, []),
                key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx),
            )
            tuples.append(
                CheckpointTuple(
                    config=_config(row.thread_id, row.ns, row.checkpoint_id),
                    checkpoint={**checkpoint, "channel_values": channel_values},
                    metadata=json.loads(row.metadata),
                    parent_config=None
                    if row.parent_id is None
                    else _config(row.thread_id, row.ns, row.parent_id),
                    pending_writes=[self._pending(write, found) for write in pending],
                )
            )
        return tuples

    def _pending(self, write: LangGraphWrite, values: dict[str, LangGraphValue]) -> PendingWrite:
        if write.value_hash is None:
            return (write.task_id, write.channel, self.serde.loads_typed(unpack(write.type, write.value)))
        stored = values.get(write.value_hash)
        if stored is None:
            what = f"write {write.idx} of task {write.task_id} on checkpoint {write.checkpoint_id}"
            problem = f"its value {write.value_hash} is missing"
            raise CorruptRecord(what, "langgraph_values", (write.value_hash,), problem)
        return (write.task_id, write.channel, self.serde.loads_typed(unpack(stored.type, stored.body)))

    async def _page(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: str | None,
        offset: int,
    ) -> tuple[list[CheckpointTuple], int]:
        """The next matching checkpoints from `offset` on, and the offset after them (-1: no more)."""
        if config is None:
            thread_id, ns, checkpoint_id = None, None, None
        else:
            configurable = config.get("configurable") or {}
            thread_id, checkpoint_id = configurable.get("thread_id"), configurable.get("checkpoint_id")
            ns = configurable.get("checkpoint_ns")
        async with self.store.reading() as tx:
            if checkpoint_id is not None and thread_id is not None:
                one = await tx.get_langgraph_checkpoint(str(thread_id), str(ns or ""), checkpoint_id)
                rows = [one] if one is not None and (before is None or one.checkpoint_id < before) else []
                following = -1
            else:
                thread = None if thread_id is None else str(thread_id)
                rows = await tx.list_langgraph_checkpoints(
                    thread, ns, before=before, limit=_PAGE, offset=offset
                )
                following = offset + len(rows) if len(rows) == _PAGE else -1
            if filter:
                rows = [row for row in rows if _matches(json.loads(row.metadata), filter)]
            fetched = await _fetch(tx, rows)
        return self._tuples(fetched), following

    # ------------------------------------------------------------------ writing

    async def _put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, ns, parent_id = _where(config)
        # Without its id (the row's key) and its values but the small ones (the others stored by hash).
        body = {key: value for key, value in checkpoint.items() if key not in ("channel_values", "id")}
        if "ts" in body:
            body["ts"] = stored_ts(body["ts"])
        described = get_serializable_checkpoint_metadata(config, metadata)
        run_id = described.get("run_id")
        for attempt in (1, 2):
            encoded = self._values.encode(
                thread_id, ns, checkpoint["channel_values"], checkpoint["channel_versions"], new_versions
            )
            type_, dumped = pack(self.serde.dumps_typed({**body, "channel_values": encoded.inline}))
            row = LangGraphCheckpoint(
                thread_id=thread_id,
                ns=ns,
                checkpoint_id=checkpoint["id"],
                parent_id=parent_id,
                run_id=None if run_id is None else str(run_id),
                type=type_,
                body=dumped,
                metadata=json.dumps(described, ensure_ascii=False, separators=(",", ":")),
                values=json.dumps(encoded.hashes, separators=(",", ":")),
            )
            lease = await self._lease(thread_id)  # refused here if another writer holds the thread
            try:
                await self.store.put_langgraph_checkpoint(row, encoded.rows, fence=lease)
            except ConflictError:
                # A value this saver knew is gone (the thread was pruned elsewhere): store them whole.
                self._values.forget(thread_id)
                if attempt == 2:
                    raise
                continue
            self._values.remember(thread_id, ns, encoded.known)
            break
        if self._tasks is not None and not ns:
            await self._tasks.checkpoint(thread_id, checkpoint["id"], checkpoint["channel_values"].keys())
        return _config(thread_id, ns, checkpoint["id"])

    async def _put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> None:
        thread_id, ns, checkpoint_id = _where(config)
        if checkpoint_id is None:
            raise ValueError("put_writes needs the config of a checkpoint (configurable.checkpoint_id)")
        serialized = [(channel, value, self.serde.dumps_typed(value)) for channel, value in writes]
        for attempt in (1, 2):
            rows, values = [], []
            for index, (channel, value, (type_, dumped)) in enumerate(serialized):
                idx = WRITES_IDX_MAP.get(channel, index)
                write = LangGraphWrite(
                    thread_id, ns, checkpoint_id, task_id, idx, channel, type_, dumped, task_path
                )
                if len(dumped) >= SHARED:  # a value of its own, which the next checkpoint may name too
                    stored = self._values.write_row(thread_id, ns, channel, value, (type_, dumped))
                    values.append(stored)
                    write = replace(write, value=b"", value_hash=stored.hash)
                rows.append(write)
            try:
                await self.store.put_langgraph_writes(rows, values, fence=await self._lease(thread_id))
            except ConflictError:
                # The list a value extends is gone (the thread was pruned elsewhere): store them whole.
                self._values.forget(thread_id)
                if attempt == 2:
                    raise
                continue
            break
        if self._tasks is not None and not ns:
            await self._tasks.writes(thread_id, checkpoint_id, writes)

    async def _delete_thread(self, thread_id: str) -> None:
        self._values.forget(thread_id)
        if self._tasks is not None:
            self._tasks.forget(thread_id)
        await self.store.delete_langgraph_thread(thread_id)

    async def _delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._values.forget()
        await self.store.delete_langgraph_runs(list(run_ids))

    async def _copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self.store.copy_langgraph_thread(source_thread_id, target_thread_id)

    async def _prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        if strategy not in _STRATEGIES:
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            self._values.forget(thread_id)
        await self.store.prune_langgraph_threads(list(thread_ids), keep_latest=strategy == "keep_latest")

    # ------------------------------------------------------------------ LangGraph's async methods

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names, or its thread's latest; None when there is none."""
        return await self._bridge.run(lambda: self._get(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first: of the config's thread (and namespace, if it names one), or of
        every thread; those whose metadata has every key of `filter` with its value, made before
        `before`'s checkpoint, at most `limit`."""
        pages = _Pages(before, limit)
        while pages.more:
            found = await self._bridge.run(lambda: self._page(config, filter, pages.before, pages.offset))
            for checkpoint in pages.take(*found):
                yield checkpoint

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint after the one the config names; return the config that names it."""
        return await self._bridge.run(lambda: self._put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a task's pending writes on the checkpoint the config names (again: kept once)."""
        await self._bridge.run(lambda: self._put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and value of the thread."""
        await self._bridge.run(lambda: self._delete_thread(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints those runs made, and their writes."""
        await self._bridge.run(lambda: self._delete_for_runs(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another."""
        await self._bridge.run(lambda: self._copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only each namespace's latest checkpoint of the threads (``"keep_latest"``), or none
        (``"delete"``); the values no kept checkpoint reaches go too."""
        await self._bridge.run(lambda: self._prune(thread_ids, strategy))

    # ------------------------------------------------------------------ LangGraph's sync methods

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See `aget_tuple`."""
        return self._bridge.wait(lambda: self._get(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """See `alist`."""
        pages = _Pages(before, limit)
        while pages.more:
            found = self._bridge.wait(lambda: self._page(config, filter, pages.before, pages.offset))
            yield from pages.take(*found)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """See `aput`."""
        return self._bridge.wait(lambda: self._put(config, checkpoint, metadata, new_versions))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """See `aput_writes`."""
        self._bridge.wait(lambda: self._put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """See `adelete_thread`."""
        self._bridge.wait(lambda: self._delete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """See `adelete_for_runs`."""
        self._bridge.wait(lambda: self._delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """See `acopy_thread`."""
        self._bridge.wait(lambda: self._copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """See `aprune`."""
        self._bridge.wait(lambda: self._prune(thread_ids, strategy))

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> RatchetSaver:
        """A copy whose serializer also allows those types (as LangGraph's `compile` asks), for the
        channel values too."""
        clone = cast("RatchetSaver", super().with_allowlist(extra_allowlist))
        if clone is not self:
            clone._values = self._values.using(clone.serde)
        return clone

    def get_next_version(self, current: Any, channel: None) -> Any:
        """The version after `current`: integers, or LangGraph's strings for a thread that has them."""
        if isinstance(current, str):  # a thread another saver began (a copied database)
            return f"{int(current.split('.')[0]) + 1:032}.{random.random():016}"
        return 1 if current is None else current + 1


class _Pages:
    """Where a listing is: the next page's offset, and how many checkpoints it may still yield."""

    def __init__(self, before: RunnableConfig | None, limit: int | None) -> None:
        self.before = None if before is None else _where(before)[2]
        self.offset = 0
        self.left = limit

    @property
    def more(self) -> bool:
        return self.offset >= 0 and (self.left is None or self.left > 0)

    def take(self, page: list[CheckpointTuple], following: int) -> list[CheckpointTuple]:
        """The checkpoints of `page` to yield; `following` is the next page's offset (-1: none)."""
        self.offset = following
        if self.left is None:
            return page
        taken = page[: self.left]
        self.left -= len(taken)
        return taken


def _matches(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in wanted.items())


def _is_reference(graph: str) -> bool:
    source, sep, name = graph.rpartition(":")
    return bool(sep and source and name)


def _running_loop() -> asyncio.AbstractEventLoop:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "RatchetSaver(store) is made inside the event loop its store runs in; "
            "else open it with RatchetSaver.from_conn_string(url)"
        ) from None


class _Opening(
    contextlib.AbstractAsyncContextManager["RatchetSaver"], contextlib.AbstractContextManager["RatchetSaver"]
):
    """`RatchetSaver.from_conn_string`: the store opened and closed around a block, async or not."""

    def __init__(self, cls: type[RatchetSaver], url: str, options: dict[str, Any]) -> None:
        self._cls = cls
        self._url = url
        self._options = options
        self._saver: RatchetSaver | None = None
        self._bridge: LoopBridge | None = None

    async def __aenter__(self) -> RatchetSaver:
        store = await open_store(self._url)
        self._saver = self._cls(store, **self._options)
        return self._saver

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._saver is not None:
            try:
                await self._saver.arelease()
            finally:
                await self._saver.store.close()

    def __enter__(self) -> RatchetSaver:
        bridge = LoopBridge.start()
        try:
            store = bridge.wait(lambda: open_store(self._url))
        except BaseException:
            bridge.stop()
            raise
        self._bridge = bridge
        self._saver = self._cls(store, bridge=bridge, **self._options)
        return self._saver

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._saver is None or self._bridge is None:
            return
        saver = self._saver
        try:
            self._bridge.wait(saver.arelease)
        finally:
            try:
                self._bridge.wait(saver.store.close)
            finally:
                self._bridge.stop()

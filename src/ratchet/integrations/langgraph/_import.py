"""`ratchet langgraph import`: copy a SqliteSaver or PostgresSaver database into a Ratchet store.

Every checkpoint of every thread and namespace is read by the source's own
saver (`_sources.py`) and written by `RatchetSaver`'s own `aput` and
`aput_writes`, oldest first within each namespace, so the store holds what
a graph run on RatchetSaver would have written: each channel value once, a
growing list as the items each version adds. Checkpoint ids, parents,
metadata, channel versions (LangGraph's strings: the thread goes on with
them) and pending writes (with their task path and index) are kept.

A re-run is safe: a checkpoint the store already holds (same thread,
namespace and id) is not copied again, so a run that stopped half-way is
finished by the next, and a finished one copies nothing. The pending writes
of the newest checkpoint already held in each namespace are written again
(kept once): the run that stopped may have stopped between a checkpoint and
its writes. Checkpoints are never compared or replaced: one the store holds
is taken as the one the source has under the same id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, CheckpointTuple, writes_sort_key

from ...errors import InputError
from ._saver import RatchetSaver
from ._sources import CheckpointKey, Source

__all__ = ["Imported", "import_checkpoints"]

_PAGE = 500  # checkpoints of the store read per query, to see which it holds


@dataclass
class Imported:
    """What an import copied, and what it found already there."""

    threads: int = 0
    checkpoints: int = 0
    writes: int = 0
    skipped: int = 0

    def as_json(self) -> dict[str, int]:
        return {
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "writes": self.writes,
            "skipped": self.skipped,
        }


class SourceMismatch(InputError):
    """The source's writes and what its saver returns of them do not match (a database being written)."""


def _config(key: CheckpointKey, checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": key.thread_id, "checkpoint_ns": key.ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def import_checkpoints(
    source: Source, saver: RatchetSaver, *, progress: Callable[[str, Imported], None] | None = None
) -> Imported:
    """Copy every checkpoint of `source` into `saver`'s store (see the module's docstring).

    `progress` is called after each thread with its id and the totals so far.
    """
    done = Imported()
    for thread_id, thread_keys in groupby(source.keys(), key=lambda key: key.thread_id):
        copied = False
        for _ns, keys in groupby(thread_keys, key=lambda key: key.ns):
            copied |= await _namespace(source, saver, list(keys), done)
        done.threads += copied
        if progress is not None:
            progress(thread_id, done)
    return done


async def _held(saver: RatchetSaver, key: CheckpointKey) -> set[str]:
    """The ids of the checkpoints the store holds in the key's thread and namespace."""
    held: set[str] = set()
    offset = 0
    while True:
        rows = await saver.store.list_langgraph_checkpoints(key.thread_id, key.ns, limit=_PAGE, offset=offset)
        held.update(row.checkpoint_id for row in rows)
        if len(rows) < _PAGE:
            return held
        offset += len(rows)


async def _namespace(source: Source, saver: RatchetSaver, keys: list[CheckpointKey], done: Imported) -> bool:
    """Copy one namespace of a thread, oldest first; whether any checkpoint was copied."""
    held = await _held(saver, keys[0])
    present = [key for key in keys if key.checkpoint_id in held]
    done.skipped += len(present)
    if present:
        newest = present[-1]
        # The store's values teach the saver what the next checkpoints extend (else stored whole once).
        await saver.aget_tuple(_config(newest, newest.checkpoint_id))
        again = _read(source, newest)
        done.writes += await _put_writes(source, saver, newest, again.pending_writes or [])
    versions: dict[str, ChannelVersions] = {}
    copied = False
    for key in keys:
        if key.checkpoint_id in held:
            continue
        found = _read(source, key)
        checkpoint = found.checkpoint
        parent_id = (
            None if found.parent_config is None else found.parent_config["configurable"]["checkpoint_id"]
        )
        current = checkpoint["channel_versions"]
        before = versions.get(parent_id) if parent_id is not None else {}
        # What LangGraph's loop passes as new_versions: the channels the parent had at another version.
        new = dict(current) if before is None else {c: v for c, v in current.items() if before.get(c) != v}
        await saver.aput(_config(key, parent_id), checkpoint, found.metadata, new)
        versions[key.checkpoint_id] = dict(current)
        done.checkpoints += 1
        done.writes += await _put_writes(source, saver, key, found.pending_writes or [])
        copied = True
    return copied


def _read(source: Source, key: CheckpointKey) -> CheckpointTuple:
    found = source.saver.get_tuple(_config(key, key.checkpoint_id))
    if found is None:
        raise SourceMismatch(
            f"checkpoint {key.checkpoint_id} of thread {key.thread_id!r} went from the source "
            "while it was read; import from a database no graph is writing"
        )
    return found


async def _put_writes(
    source: Source, saver: RatchetSaver, key: CheckpointKey, pending: Sequence[tuple[str, str, Any]]
) -> int:
    """Write a checkpoint's pending writes as LangGraph's loop wrote them: one call per task, and one
    per special write (an interrupt, an error, a resume value: their index is the channel's)."""
    if not pending:
        return 0
    # get_tuple gives the writes in LangGraph's order of writes: the order of these columns.
    described = sorted(source.write_keys(key), key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
    if [(w.task_id, w.channel) for w in described] != [(task, channel) for task, channel, _ in pending]:
        raise SourceMismatch(
            f"the pending writes of checkpoint {key.checkpoint_id} of thread {key.thread_id!r} changed "
            "while they were read; import from a database no graph is writing"
        )
    config = _config(key, key.checkpoint_id)
    regular: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    for about, (_task, channel, value) in zip(described, pending, strict=True):
        if about.idx < 0:
            await saver.aput_writes(config, [(channel, value)], about.task_id, about.task_path)
        else:
            regular.setdefault((about.task_id, about.task_path), []).append((channel, value))
    for (task_id, task_path), writes in regular.items():
        await saver.aput_writes(config, writes, task_id, task_path)
    return len(pending)

"""`StreamWriter`: what one run of a task writes to the task's stream (records/stream.py), in batches.

A streamed model call hands over its answer a piece at a time; committing
each piece would make a long answer cost a commit a token. The writer keeps
the entries of a run in a buffer and appends them in one store write when
the buffer holds `FLUSH_BYTES` of text, when its oldest entry is
`FLUSH_AGE` seconds old, and whenever an attempt ends (before its outcome is
journaled), so a reader that sees the call journaled, or the task ended, has
seen every entry the call wrote. Each append is fenced by the run's lease: a
worker that lost the task writes nothing more.

A model call's attempt is framed by marks (docs/streaming.md, "Marks")::

    attempt {}                          an attempt begins
    text "..." (any number)             its pieces, in order
    end {"outcome": "succeeded"}        or "failed" (with "error_type"), or "interrupted"

An attempt cut off by a crash or a kill has no ``end``. When a later run
begins the same call again, it first writes that ``end`` for the cut
attempt, ``{"outcome": "interrupted", "cut_at": OFFSET}`` (OFFSET: the
offset of the last entry the cut attempt wrote), then the new ``attempt``
mark with ``{"restarted": true, "cut_at": OFFSET}``. To find the cut
attempt, a run reads its task's stream once, when it first streams (or
writes a value): a first run reads an empty stream.

A failed append (a `StoreError`) does not fail the model call: the batch is
dropped, and the next mark written says how many entries were lost
(``"dropped": N``). The call's answer is whole in the journal either way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import JsonValue

from ..errors import LeaseLost, StoreError
from ..records import Lease, StreamEntry, StreamKind
from ..store import StateStore
from ..store.ops.streams import STREAM_PAGE

__all__ = ["FLUSH_AGE", "FLUSH_BYTES", "StreamWriter"]

FLUSH_BYTES = 4096
"""A batch is appended once its entries hold this many characters of text (marks count `MARK_SIZE`)."""

FLUSH_AGE = 0.1
"""... or once its oldest entry has waited this many seconds."""

MARK_SIZE = 64  # what a mark counts towards FLUSH_BYTES: a stream of marks alone is still batched

T = TypeVar("T")

TextSink = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class _History:
    """What the task's stream held when this run first looked: open attempts, begun ones, values."""

    open: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> (attempt, last offset)
    begun: set[tuple[int, int]] = field(default_factory=set)  # (seq, attempt)
    values: set[int] = field(default_factory=set)  # seqs of the values written


class StreamWriter:
    """The entries one run of a task writes to its stream, appended in batches fenced by the run's lease.

    Args:
        store: the task's store.
        task_id: the task whose stream it writes.
        lease: the run's lease, the fence of every append.
        max_bytes: append once the buffer holds this much text.
        max_age: append once the buffer's oldest entry is this old (seconds).
    """

    def __init__(
        self,
        store: StateStore,
        task_id: str,
        lease: Lease,
        *,
        max_bytes: int = FLUSH_BYTES,
        max_age: float = FLUSH_AGE,
    ) -> None:
        self.store, self.task_id, self.lease = store, task_id, lease
        self.max_bytes, self.max_age = max_bytes, max_age
        self.appends = 0  # store writes made, for the curious (the tests count them)
        self.dropped = 0  # entries lost to failed appends, not yet told in a mark
        self._buffer: list[StreamEntry] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None
        self._due: set[asyncio.Task[None]] = set()  # flushes the timer started, until they end
        self._lock = asyncio.Lock()
        self._history: _History | None = None
        self._reading: asyncio.Lock = asyncio.Lock()
        self._fenced_off = False  # the lease was lost: nothing more is written

    # ------------------------------------------------------------------ a model call's attempt

    async def attempt(self, seq: int, attempt: int, answer: Callable[[TextSink], Awaitable[T]]) -> T:
        """Run ``answer(on_text)``, one attempt of the model call at `seq`, framed by its marks.

        Each piece `answer` hands `on_text` is a ``text`` entry. However the
        attempt ends, its ``end`` mark is appended before this returns or
        raises (a store that refuses it does not change the outcome).
        """
        await self._begin(seq, attempt)

        async def on_text(piece: str) -> None:
            if piece:
                await self._add(StreamKind.TEXT, seq, attempt, piece, size=len(piece))

        try:
            result = await answer(on_text)
        except BaseException as error:
            # Stopped (cancelled, the lease lost) it is "interrupted"; raising, "failed".
            outcome: dict[str, JsonValue] = (
                {"outcome": "failed", "error_type": type(error).__name__}
                if isinstance(error, Exception)
                else {"outcome": "interrupted"}
            )
            # In a task of its own, so a second cancellation does not cut the append short.
            with contextlib.suppress(Exception, LeaseLost, asyncio.CancelledError):
                await asyncio.shield(self._end(seq, attempt, outcome))
            raise
        await self._end(seq, attempt, {"outcome": "succeeded"})
        return result

    async def _begin(self, seq: int, attempt: int) -> None:
        history = await self._read_history()
        value: dict[str, JsonValue] = {}
        cut = history.open.pop(seq, None)
        if cut is not None:  # a run before this one was stopped in the middle of this call
            cut_attempt, cut_at = cut
            await self._add(StreamKind.END, seq, cut_attempt, {"outcome": "interrupted", "cut_at": cut_at})
            value = {"restarted": True, "cut_at": cut_at}
        elif (seq, attempt) in history.begun:  # begun before, and ended, but not journaled: again
            value = {"restarted": True}
        history.begun.add((seq, attempt))
        await self._add(StreamKind.ATTEMPT, seq, attempt, value)

    async def _end(self, seq: int, attempt: int, value: dict[str, JsonValue]) -> None:
        await self._add(StreamKind.END, seq, attempt, value)
        await self.flush()

    # ------------------------------------------------------------------ a workflow's values

    async def write_value(self, seq: int, key: str, value: JsonValue) -> bool:
        """Append a workflow's value (``ctx.write_stream``) now, after what is buffered; once per `seq`.

        Returns whether it was written by this call: False when the stream
        holds the value of `seq` already (the write is replayed). A store
        that fails raises here: the workflow asked for this write itself.

        Raises:
            StoreError: the store refused the write.
            LeaseLost: another worker holds the task now.
        """
        history = await self._read_history()
        if seq in history.values:
            return False
        entry = StreamEntry(task_id=self.task_id, kind=StreamKind.VALUE, seq=seq, key=key, value=value)
        async with self._lock:
            batch, self._buffer, self._size = [*self._buffer, entry], [], 0
            self._cancel_timer()
            await self.store.append_stream(self.task_id, batch, fence=self.lease)
            self.appends += 1
        history.values.add(seq)
        return True

    # ------------------------------------------------------------------ the buffer

    async def _add(
        self, kind: StreamKind, seq: int, attempt: int, value: JsonValue, *, size: int = 0
    ) -> None:
        if self._fenced_off:
            return
        if kind is not StreamKind.TEXT and self.dropped:
            assert isinstance(value, dict)
            value, self.dropped = {**value, "dropped": self.dropped}, 0
        self._buffer.append(
            StreamEntry(task_id=self.task_id, kind=kind, seq=seq, attempt=attempt, value=value)
        )
        self._size += size or MARK_SIZE
        if self._size >= self.max_bytes:
            await self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.max_age, self._flush_due)

    def _flush_due(self) -> None:
        self._timer = None
        due = asyncio.get_running_loop().create_task(self.flush())
        self._due.add(due)
        due.add_done_callback(self._due.discard)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def flush(self) -> None:
        """Append what is buffered, in one store write; a failed one drops it (counted in `dropped`)."""
        self._cancel_timer()
        async with self._lock:
            batch, self._buffer, self._size = self._buffer, [], 0
            if not batch or self._fenced_off:
                return
            try:
                await self.store.append_stream(self.task_id, batch, fence=self.lease)
                self.appends += 1
            except LeaseLost:
                self._fenced_off = True  # another worker runs the task: its run writes the stream now
            except StoreError:
                self.dropped += len(batch)

    async def close(self) -> None:
        """Append what is left: the run ends, or waits (a reader that sees it so has seen every entry)."""
        await self.flush()
        if self._due:
            await asyncio.gather(*self._due, return_exceptions=True)

    # ------------------------------------------------------------------ what the stream held

    async def _read_history(self) -> _History:
        """The task's stream as this run found it, read once (at its first attempt or value)."""
        if self._history is not None:
            return self._history
        async with self._reading:
            if self._history is None:
                self._history = await self._read()
        return self._history

    async def _read(self) -> _History:
        history = _History()
        offset = 0
        while True:
            page = await self.store.read_stream(self.task_id, from_offset=offset, limit=STREAM_PAGE)
            for entry in page:
                _note(history, entry)
            if len(page) < STREAM_PAGE:
                return history
            offset = page[-1].offset + 1


def _note(history: _History, entry: StreamEntry) -> None:
    seq = entry.seq
    if seq is None:
        return
    if entry.kind is StreamKind.VALUE:
        history.values.add(seq)
    elif entry.kind is StreamKind.ATTEMPT and entry.attempt is not None:
        history.open[seq] = (entry.attempt, entry.offset)
        history.begun.add((seq, entry.attempt))
    elif entry.kind is StreamKind.TEXT and seq in history.open:
        history.open[seq] = (history.open[seq][0], entry.offset)
    elif entry.kind is StreamKind.END:
        history.open.pop(seq, None)

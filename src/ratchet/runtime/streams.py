"""`follow_stream`: a task's stream from an offset on, in order, as it is written; `Runtime.stream`.

`Runtime.stream`, ``ratchet stream``, ``ratchet run``'s printing of a model's
text and the HTTP API's ``GET /api/tasks/{id}/stream`` all read a task's
stream (records/stream.py) through this one loop, so each resumes the same
way: from the offset after the last entry it gave. `attempts` and `answers`
put a stream's pieces back together per model call, one attempt apart from
the next (docs/streaming.md, "Reading a stream").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import CorruptRecord, InputError
from ..records import StreamEntry, StreamKind, Task
from ..store.base import StateStore
from ..store.changes import stream_topic
from ..store.ops.streams import STREAM_PAGE

__all__ = ["StreamAttempt", "StreamMethods", "answers", "attempts", "follow_stream"]


async def follow_stream(
    store: StateStore,
    task_id: str,
    *,
    from_offset: int = 0,
    follow: bool = True,
    idle: float = 30.0,
    page: int = STREAM_PAGE,
) -> AsyncIterator[list[StreamEntry]]:
    """Yield the task's stream entries from `from_offset` on, oldest first, in batches of at most `page`.

    Without `follow`, it ends once the stored entries are given; with it, it
    waits for more (woken by the store's change feed, looking again at least
    every `idle` seconds and after each store poll) and ends once the task
    has ended and every entry it wrote is given.

    Raises:
        TaskNotFound: no task has that id.
        InputError: `from_offset` is negative.
    """
    if isinstance(from_offset, bool) or not isinstance(from_offset, int) or from_offset < 0:
        raise InputError(f"the stream offset must be a whole number, 0 or more, not {from_offset!r}")
    async with store.changes(stream_topic(task_id)) as feed:
        offset = from_offset
        while True:
            # One read for both, so a task seen ended has all its entries seen too (the run's
            # last stream write commits before, or with, the task's end).
            async with store.reading() as tx:
                try:
                    task: Task | None = await tx.get_task(task_id)
                except CorruptRecord:  # its stream is rows of its own, still readable
                    task = None
                entries = await tx.read_stream(task_id, from_offset=offset, limit=page)
            if entries:
                yield entries
                offset = entries[-1].offset + 1
            if len(entries) == page:
                continue  # more are stored: the next page, at once
            if not follow or (task is not None and task.status.is_terminal):
                return
            # PostgreSQL wakes us on each append (NOTIFY); SQLite looks again after a short poll.
            await feed.wait(idle)


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...


class StreamMethods:
    """``Runtime.stream``: part of `Runtime`."""

    async def stream(
        self: _Host, task_id: str, *, from_offset: int = 0, follow: bool = True
    ) -> AsyncIterator[StreamEntry]:
        """The task's stream, entry by entry, from offset `from_offset` on (docs/streaming.md).

        The pieces of text its model writes as it answers, the marks where
        each attempt of a model call begins and ends, and the values its
        workflow writes (``ctx.write_stream``). With `follow` (the default)
        it waits for more until the task has ended and every entry is
        given; without, it ends with what is stored. A reader that stopped
        goes on from the offset after the last entry it got.

        Raises:
            TaskNotFound: no task has that id.
            InputError: `from_offset` is negative.
        """
        await self.store.get_task(task_id)  # no such task is an error, not an empty stream
        async for batch in follow_stream(self.store, task_id, from_offset=from_offset, follow=follow):
            for entry in batch:
                yield entry


@dataclass(slots=True)
class StreamAttempt:
    """One attempt of a streamed model call, put together from its entries.

    Attributes:
        seq, attempt: the call's journal seq and the attempt's number.
        text: its pieces, joined in order.
        outcome: how it ended: ``succeeded``, ``failed``, ``interrupted`` (cut
            off, or stopped); None while it is being written, or when the
            entries given end before its ``end`` mark.
        restarted: it begins again an attempt a stopped run had begun.
        start, stop: the offsets of its first and last entries.
    """

    seq: int
    attempt: int
    text: str = ""
    outcome: str | None = None
    restarted: bool = False
    start: int = 0
    stop: int = 0
    pieces: list[str] = field(default_factory=list, repr=False)


def attempts(entries: Iterable[StreamEntry]) -> list[StreamAttempt]:
    """Each attempt of each streamed model call in `entries`, in the order they began.

    Entries read from an offset in the middle of an attempt give that
    attempt from there on. A ``value`` entry is no attempt's.
    """
    found: list[StreamAttempt] = []
    current: dict[int, StreamAttempt] = {}  # by seq: its attempt not yet ended
    for entry in entries:
        if entry.seq is None or entry.kind is StreamKind.VALUE:
            continue
        mark = entry.value if isinstance(entry.value, dict) else {}
        now = current.get(entry.seq)
        if entry.kind is StreamKind.ATTEMPT or now is None:
            if now is not None:  # begun again with no end between: the one before was cut
                now.outcome = "interrupted"
            now = current[entry.seq] = StreamAttempt(
                seq=entry.seq, attempt=entry.attempt or 1, start=entry.offset, stop=entry.offset
            )
            now.restarted = entry.kind is StreamKind.ATTEMPT and mark.get("restarted") is True
            found.append(now)
        now.stop = entry.offset
        if entry.kind is StreamKind.TEXT and isinstance(entry.value, str):
            now.pieces.append(entry.value)
        elif entry.kind is StreamKind.END:
            outcome = mark.get("outcome")
            now.outcome = outcome if isinstance(outcome, str) else "failed"
            del current[entry.seq]
    for each in found:
        each.text = "".join(each.pieces)
    return found


def answers(entries: Iterable[StreamEntry]) -> dict[int, str]:
    """Each streamed model call's answer, by seq: the text of its attempt that succeeded.

    A call with no attempt that succeeded (yet) gives its latest attempt's
    text: what is written so far. Pieces of two attempts are never joined.
    """
    answer: dict[int, str] = {}
    done: set[int] = set()
    for each in attempts(entries):
        if each.seq not in done:
            answer[each.seq] = each.text
        if each.outcome == "succeeded":
            done.add(each.seq)
    return answer

"""`StreamOps`: the store operations of the tasks' streams (records/stream.py).

Part of `StoreOps` (store.py); the memory store (store/memory/streams.py) and
every SQL store (store/sql/streams.py) implement them with the behaviour written here.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from ...errors import InputError
from ...records import StreamEntry, StreamKind

__all__ = ["STREAM_PAGE", "StreamOps", "check_entries"]

STREAM_PAGE = 1000
"""How many entries one read of a stream takes at most, unless asked for fewer."""


class StreamOps(abc.ABC):
    """Appending to a task's stream and reading it from an offset on."""

    @abc.abstractmethod
    async def append_stream(self, task_id: str, entries: Sequence[StreamEntry]) -> list[StreamEntry]:
        """Append `entries` to the task's stream, in order; return them as stored, with their offsets.

        Each entry gets the task's next offset (0 for its first). A
        ``value`` entry whose ``seq`` the task's stream already holds as a
        ``value`` is not written again (a replayed ``ctx.write_stream``):
        the one stored is returned in its place. Offsets are given in turn:
        two appends to one stream happen one after the other.

        Raises:
            TaskNotFound: no task has that id.
            InputError: an entry belongs to another task.
        """

    @abc.abstractmethod
    async def read_stream(
        self, task_id: str, *, from_offset: int = 0, limit: int = STREAM_PAGE
    ) -> list[StreamEntry]:
        """Return the task's stream entries from offset `from_offset` on, oldest first, at most `limit`.

        An empty list when the task has none there (or no task has that id).
        """


def check_entries(task_id: str, entries: Sequence[StreamEntry]) -> None:
    """Refuse entries of another task, and a ``value`` without the seq that writes it once.

    Raises:
        InputError: what is wrong, in one line.
    """
    for entry in entries:
        if entry.task_id != task_id:
            raise InputError(f"a stream entry of task {entry.task_id!r} cannot go in {task_id!r}'s stream")
        if entry.kind is StreamKind.VALUE and entry.seq is None:
            raise InputError("a stream value needs the seq of the write that makes it, to be written once")

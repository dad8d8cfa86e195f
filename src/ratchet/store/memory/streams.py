"""The stream operations (`StreamOps`) of the memory store, as part of its operations."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import TaskNotFound
from ...records import StreamEntry
from ..changes import stream_topic
from ..ops.streams import STREAM_PAGE, StreamOps, check_entries
from .undo import UndoLog

__all__ = ["MemoryStreams"]


class MemoryStreams(StreamOps, UndoLog):
    """Each task's stream as a dict of JSON text by offset; ``tasks`` is the memory store's task table."""

    tasks: dict[str, str]
    touched: set[str]

    def __init__(self) -> None:
        super().__init__()
        self.streams: dict[str, dict[int, str]] = {}

    async def append_stream(self, task_id: str, entries: Sequence[StreamEntry]) -> list[StreamEntry]:
        check_entries(task_id, entries)
        if task_id not in self.tasks:
            raise TaskNotFound(task_id)
        stream = self._rows(self.streams, task_id)
        written: dict[int | None, StreamEntry] = {}
        if any(entry.kind == "value" for entry in entries):  # a read of the whole stream only then
            stored_entries = (StreamEntry.from_json(stream[offset]) for offset in stream)
            written = {entry.seq: entry for entry in stored_entries if entry.kind == "value"}
        stored: list[StreamEntry] = []
        for entry in entries:
            if entry.kind == "value" and entry.seq in written:
                stored.append(written[entry.seq])
                continue
            entry = entry.model_copy(update={"offset": len(stream)})
            self._set(stream, entry.offset, entry.to_json())
            if entry.kind == "value":
                written[entry.seq] = entry
            stored.append(entry)
        self.touched.add(stream_topic(task_id))
        return stored

    async def read_stream(
        self, task_id: str, *, from_offset: int = 0, limit: int = STREAM_PAGE
    ) -> list[StreamEntry]:
        stream = self.streams.get(task_id, {})
        offsets = range(max(from_offset, 0), min(len(stream), max(from_offset, 0) + max(limit, 0)))
        return [StreamEntry.from_json(stream[offset]) for offset in offsets]

"""The stream operations (`StreamOps`) written once for every SQL database, as part of `SqlOps`."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import TaskNotFound
from ...records import StreamEntry, StreamKind, TaskStatus
from ..changes import stream_topic
from ..ops.streams import STREAM_PAGE, StreamOps, check_entries
from . import rows
from .driver import Driver, Params

__all__ = ["SqlStreams"]


class SqlStreams(StreamOps):
    """`StreamOps` over a driver; `SqlOps` supplies the driver, the task lock and the numbering."""

    _d: Driver
    touched: set[str]

    async def _lock_task(self, task_id: str) -> TaskStatus:
        raise NotImplementedError  # SqlOps's

    async def _next_number(self, kind: str, query: str, owner: str, params: Params) -> int:
        raise NotImplementedError  # SqlOps's

    async def append_stream(self, task_id: str, entries: Sequence[StreamEntry]) -> list[StreamEntry]:
        check_entries(task_id, entries)
        if not entries:
            return []
        # Not the task's row lock: a stream is written while its task runs, and readers of the
        # task must not wait on it. The numbering's own lock orders two appends to one stream.
        offset = await self._next_number("stream", "next_stream_offset", task_id, {"task_id": task_id})
        if offset == 0 and await self._d.one("task_exists", {"id": task_id}) is None:
            raise TaskNotFound(task_id)  # a stream with rows has its task: deleting one deletes both
        stored: list[StreamEntry] = []
        fresh: list[StreamEntry] = []
        values: dict[int | None, StreamEntry] = {}  # this append's values, by seq
        for entry in entries:
            if entry.kind is StreamKind.VALUE:
                earlier = values.get(entry.seq)
                if earlier is None:
                    found = await self._d.one("stream_value", {"task_id": task_id, "seq": entry.seq})
                    earlier = rows.stream_entry_from_record(found[0]) if found is not None else None
                if earlier is not None:
                    stored.append(earlier)
                    continue
            entry = entry.model_copy(update={"offset": offset})
            offset += 1
            if entry.kind is StreamKind.VALUE:
                values[entry.seq] = entry
            fresh.append(entry)
            stored.append(entry)
        await self._d.execute_many(
            "insert_stream_entry",
            [
                {
                    "task_id": task_id,
                    "offset": e.offset,
                    "kind": str(e.kind),
                    "seq": e.seq,
                    "record": e.to_json(),
                }
                for e in fresh
            ],
        )
        await self._d.one("notify_stream", {"task_id": task_id})
        self.touched.add(stream_topic(task_id))
        return stored

    async def _end_stream(self, task_id: str) -> None:
        """Wake the followers of an ended task's stream: its end is no write to the stream."""
        await self._d.one("notify_stream", {"task_id": task_id})
        self.touched.add(stream_topic(task_id))

    async def read_stream(
        self, task_id: str, *, from_offset: int = 0, limit: int = STREAM_PAGE
    ) -> list[StreamEntry]:
        found = await self._d.all(
            "read_stream", {"task_id": task_id, "from_offset": max(from_offset, 0), "limit": max(limit, 0)}
        )
        return [rows.stream_entry_from_record(record) for (record,) in found]

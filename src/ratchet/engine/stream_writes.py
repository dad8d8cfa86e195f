"""A workflow and its task's stream: ``ctx.write_stream(key, value)``, and the run's `StreamWriter`.

The stream (records/stream.py) is for readers: people and programs following
the task as it works (``Runtime.stream``, ``ratchet stream``). A model call
whose provider streams writes its answer's pieces there as they come
(engine/streams.py); a workflow writes entries of its own with
``write_stream``, each once: it takes a journal seq, as a journaled call
does, and the store keeps one value per seq, so a resumed run that replays
the write does not write it again. `StreamWrites` is part of `Context`.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import JsonValue, TypeAdapter, ValidationError

from ..errors import InputError
from ..records import Lease
from ..store import StateStore
from ..validation import problems
from .streams import StreamWriter

__all__ = ["StreamWrites"]

_JSON: TypeAdapter[JsonValue] = TypeAdapter(JsonValue)


class _Host(Protocol):
    """What of the context the stream uses."""

    store: StateStore
    lease: Lease
    _stream_writer: StreamWriter | None

    @property
    def task_id(self) -> str: ...

    def _take_seq(self, count: int = 1) -> int: ...

    def stream_writer(self) -> StreamWriter: ...


class StreamWrites:
    """``ctx.write_stream``, and whether model calls stream (``ctx.streaming``)."""

    streaming: bool = True
    """Whether the model calls made from now on stream when their provider can: set it False for the
    run, or around one call. Not journaled: the task never reads its stream back."""

    _stream_writer: StreamWriter | None = None

    def stream_writer(self: _Host) -> StreamWriter:
        """The run's writer of the task's stream, made when first used."""
        if self._stream_writer is None:
            self._stream_writer = StreamWriter(self.store, self.task_id, self.lease)
        return self._stream_writer

    async def write_stream(self: _Host, key: str, value: JsonValue) -> None:
        """Append ``value`` under ``key`` to the task's stream, once (a replay does not write it again).

        It takes the next journal seq, as a journaled call does, so it keeps
        its place on every replay; what the model calls before it streamed
        is appended first.

        Raises:
            InputError: `key` is not a non-empty string, or `value` is not JSON.
            StoreError: the store refused the write (the task stops, resumable).
        """
        if not isinstance(key, str) or not key:
            raise InputError(f"ctx.write_stream needs a key: a non-empty string, not {key!r}")
        try:
            checked = _JSON.validate_python(value)
        except ValidationError as error:
            raise InputError(
                f"ctx.write_stream({key!r}, ...): {problems(error, whole='the value')}"
            ) from None
        await self.stream_writer().write_value(self._take_seq(), key, checked)

    async def close_streams(self: _Host) -> None:
        """Append what the run's writer still holds (the run ends or waits)."""
        if self._stream_writer is not None:
            await self._stream_writer.close()

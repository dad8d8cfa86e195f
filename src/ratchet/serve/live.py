"""Live updates over Server-Sent Events: a task's events, its stream, and the global stream of task changes.

Three streams, each ordered and resumable (see docs/serve.md, "Live updates"):

- ``GET /api/tasks/{task_id}/events/stream``: the task's events, each
  message's ``id`` its ``seq``, its data the event as ``ratchet events
  --json`` prints it. Once the task has ended and every event it wrote was
  sent, an ``end`` message (no id) says so and the stream closes.
- ``GET /api/tasks/{task_id}/stream``: the task's stream (records/stream.py:
  its model's text as written, the marks of each attempt of a model call, its
  workflow's values), each message's ``id`` the entry's offset, its ``event``
  the entry's kind, its data the entry as ``ratchet stream --json`` prints
  it. It starts at ``?from=OFFSET`` (0 by default), or just after the offset
  ``Last-Event-ID`` names; once the task has ended and every entry was sent,
  a ``done`` message (no id; ``end`` is an attempt's mark) says so and the
  stream closes.
- ``GET /api/stream``: the store's log of task changes (ratchet.records.changes):
  a task created or its status moved, each message's ``id`` the change's
  position in that one gapless log. It never ends; a client that gives no
  position first gets a ``start`` message whose ``id`` is the newest position.

A client resumes where it stopped with the ``Last-Event-ID`` header (which a
browser's EventSource sends by itself when it reconnects) or, where it cannot
set headers, ``?after=N`` (``?from=N``, the next offset, for a task's stream);
the header wins when both are given. Streams are
driven by the store's change feed (LISTEN/NOTIFY on PostgreSQL, the store's
poll on SQLite), read at most a page at a time, take turns on the event loop
with the server's other streams (`Turns`: a replay of a long history never
holds up another request), keep a comment line flowing as a heartbeat, and
stop reading the moment the client goes away.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..errors import CorruptRecord, TaskNotFound
from ..providers.base import require_library
from ..records import Event, TaskChange
from ..runtime.streams import follow_stream
from ..store.base import StateStore
from ..store.changes import TASKS
from ..views.event_feed import follow_events, last_seq_of
from ..views.record_json import event_json, iso_time, stream_entry_json, unreadable_json
from .turns import Turns

if TYPE_CHECKING:
    from fastapi import APIRouter

__all__ = ["live_router", "parse_cursor", "parse_stream_start", "task_change_json"]

HEARTBEAT_SECONDS = 15.0
"""How often an idle stream sends a comment line, so proxies and clients know it is alive."""

PAGE = 100
"""How many records a stream reads at once: its memory stays bounded, however far behind the client is."""


_CURSOR_MAX = 2**63 - 1  # the databases' integers: a larger one would fail in the store, not here


def parse_cursor(last_event_id: str | None, after: str | None) -> int | None:
    """The position a client resumes after: its ``Last-Event-ID`` header, else ``?after=``; None for neither.

    Raises:
        ValueError: the one given is not a whole number from 0; the message says so on one line.
    """
    for name, text in (("Last-Event-ID", last_event_id), ("after", after)):
        if text is None or text.strip() == "":
            continue
        text = text.strip()
        if not text.isascii() or not text.isdigit() or int(text) > _CURSOR_MAX:
            raise ValueError(
                f"{name} must be the id of the last message received (a whole number from 0 to 2**63-1), "
                f"not {text[:40]!r}"
            )
        return int(text)
    return None


def parse_stream_start(last_event_id: str | None, from_offset: str | None) -> int:
    """The offset a task's stream starts at: after its ``Last-Event-ID``, else ``?from=``, else 0.

    Raises:
        ValueError: the one given is not a whole number from 0; the message says so on one line.
    """
    after = parse_cursor(last_event_id, None)
    if after is not None:
        return after + 1
    if from_offset is None or from_offset.strip() == "":
        return 0
    text = from_offset.strip()
    if not text.isascii() or not text.isdigit() or int(text) > _CURSOR_MAX:
        raise ValueError(
            f"from must be the offset of the first entry to send (a whole number from 0 to 2**63-1), "
            f"not {text[:40]!r}"
        )
    return int(text)


def task_change_json(change: TaskChange) -> dict[str, Any]:
    """A change of the global stream: the task's id, name, agent and status as people read it."""
    return {
        "position": change.position,
        "kind": str(change.kind),
        "task_id": change.task_id,
        "name": change.name,
        "agent": change.agent,
        "status": str(change.status),
        "waiting_on": None if change.waiting_on is None else str(change.waiting_on),
        "status_text": change.status_text,
        "parent_id": change.parent_id,
        "time": iso_time(change.time),
    }


# Characters JSON leaves raw that a line splitter takes for a line break (Python's, as sse-starlette
# splits a message's data into lines): escaped, so a model's text with one arrives as one JSON text.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _data(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_LINE_BREAKS)


async def task_event_messages(
    store: StateStore,
    task_id: str,
    after: int,
    *,
    turns: Turns,
    idle: float = HEARTBEAT_SECONDS,
    page: int = PAGE,
) -> AsyncIterator[dict[str, str]]:
    """The SSE messages of a task's events after seq `after`, then ``end`` once the task has ended."""
    pace = turns.pacer()
    try:
        await pace()  # after each message too: the next one, or the next page's read, waits its turn
        async for batch in follow_events(store, task_id, after_seq=after, idle=idle, page=page):
            for item in batch:
                if isinstance(item, Event):
                    yield {"id": str(item.seq), "data": _data(event_json(item))}
                else:
                    seq = last_seq_of([item])
                    shown = {"data": _data(unreadable_json(item)), "event": "unreadable"}
                    yield shown if seq is None else {**shown, "id": str(seq)}
                await pace()
        status: str | None = (await store.get_task(task_id)).status_text
    except (TaskNotFound, CorruptRecord):  # deleted while followed, or its row unreadable: no status to give
        status = None
    yield {"event": "end", "data": _data({"task_id": task_id, "status": status})}


async def task_stream_messages(
    store: StateStore,
    task_id: str,
    start: int,
    *,
    turns: Turns,
    idle: float = HEARTBEAT_SECONDS,
    page: int = PAGE,
) -> AsyncIterator[dict[str, str]]:
    """The SSE messages of a task's stream from offset `start` on, then ``done`` once the task has ended."""
    pace = turns.pacer()
    try:
        await pace()
        async for batch in follow_stream(store, task_id, from_offset=start, idle=idle, page=page):
            for entry in batch:
                shown = _data(stream_entry_json(entry))
                yield {"id": str(entry.offset), "event": str(entry.kind), "data": shown}
                await pace()
        status: str | None = (await store.get_task(task_id)).status_text
    except (TaskNotFound, CorruptRecord):  # deleted while followed, or its row unreadable: no status to give
        status = None
    yield {"event": "done", "data": _data({"task_id": task_id, "status": status})}


async def task_change_messages(
    store: StateStore, after: int | None, *, turns: Turns, idle: float = HEARTBEAT_SECONDS, page: int = PAGE
) -> AsyncIterator[dict[str, str]]:
    """The SSE messages of the task-change log after position `after` (from now on when None), forever."""
    pace = turns.pacer()
    async with store.changes(TASKS) as feed:  # opened before the first read: no change falls between
        if after is None:
            after = await store.last_task_change()
            yield {"event": "start", "id": str(after), "data": _data({"position": after})}
        while True:
            await pace()  # each read, and each message after it, waits its turn
            read_after = after
            unreadable: list[CorruptRecord] = []
            changes = await store.list_task_changes(after=after, limit=page, unreadable=unreadable)
            logged: list[TaskChange | CorruptRecord] = [*changes, *unreadable]
            for item in sorted(logged, key=_position):
                if isinstance(item, TaskChange):
                    yield {"id": str(item.position), "data": _data(task_change_json(item))}
                    after = item.position
                else:  # a row that cannot be read comes in its place, as on a task's stream
                    shown = {"event": "unreadable", "data": _data(unreadable_json(item))}
                    position = item.key[0]
                    if isinstance(position, int) and not isinstance(position, bool):
                        shown["id"] = str(position)
                        after = max(after, position)
                    yield shown
                await pace()
            if len(changes) + len(unreadable) < page or after == read_after:  # read all, or stuck on rows
                await feed.wait(idle)  # with no position: wait for news rather than read them again


def _position(item: TaskChange | CorruptRecord) -> int:
    """Where a change or an unreadable row of the log stands (a position that is no number: last)."""
    position = item.position if isinstance(item, TaskChange) else item.key[0]
    return position if isinstance(position, int) else _CURSOR_MAX


def live_router(store: StateStore, *, heartbeat: float = HEARTBEAT_SECONDS) -> APIRouter:
    """The routes of the live streams, over `store` (opened by the app before the first request).

    Args:
        store: the store the app serves; the streams read it and watch its change feed.
        heartbeat: seconds between comment lines on an idle stream.

    Raises:
        MissingExtra: FastAPI or sse-starlette is not installed (the ``serve`` extra).
    """
    for module, library in (("fastapi", "FastAPI"), ("sse_starlette", "sse-starlette")):
        require_library(module, feature="ratchet serve", library=library, extra="serve")
    from fastapi import APIRouter, Header, HTTPException, Query
    from sse_starlette import EventSourceResponse

    router = APIRouter(tags=["live"])
    turns = Turns()  # the streams of this server take turns on its event loop

    def cursor(last_event_id: str | None, after: str | None) -> int | None:
        try:
            return parse_cursor(last_event_id, after)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None

    def respond(messages: AsyncIterator[dict[str, str]]) -> EventSourceResponse:
        # The ping is the heartbeat; X-Accel-Buffering keeps nginx from holding messages back.
        return EventSourceResponse(messages, ping=heartbeat, headers={"X-Accel-Buffering": "no"})

    @router.get(
        "/api/tasks/{task_id}/events/stream",
        summary="Stream a task's events (Server-Sent Events)",
        response_class=EventSourceResponse,
        response_model=None,
        responses={
            200: {"content": {"text/event-stream": {}}, "description": "Each event, its id the event's seq."},
            400: {"description": "Last-Event-ID or after is not a whole number."},
            404: {"description": "No task has that id."},
        },
    )
    async def task_events_stream(
        task_id: str,
        after: str | None = Query(default=None, description="Resume after this event seq."),
        last_event_id: str | None = Header(default=None, alias="Last-Event-ID"),
    ) -> EventSourceResponse:
        start = cursor(last_event_id, after) or 0
        try:
            await store.get_task(task_id)
        except TaskNotFound:
            raise HTTPException(status_code=404, detail=f"no task has the id {task_id!r}") from None
        except CorruptRecord:
            pass  # its events are rows of their own, still readable
        return respond(task_event_messages(store, task_id, start, turns=turns, idle=heartbeat))

    @router.get(
        "/api/tasks/{task_id}/stream",
        summary="Stream a task's stream: its model's text as written, its values (Server-Sent Events)",
        response_class=EventSourceResponse,
        response_model=None,
        responses={
            200: {
                "content": {"text/event-stream": {}},
                "description": "Each entry, its id its offset and its event its kind; then done.",
            },
            400: {"description": "Last-Event-ID or from is not a whole number."},
            404: {"description": "No task has that id."},
        },
    )
    async def task_stream(
        task_id: str,
        from_offset: str | None = Query(
            default=None, alias="from", description="Start at this offset (0: the first entry)."
        ),
        last_event_id: str | None = Header(default=None, alias="Last-Event-ID"),
    ) -> EventSourceResponse:
        try:
            start = parse_stream_start(last_event_id, from_offset)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        try:
            await store.get_task(task_id)
        except TaskNotFound:
            raise HTTPException(status_code=404, detail=f"no task has the id {task_id!r}") from None
        except CorruptRecord:
            pass  # its stream is rows of its own, still readable
        return respond(task_stream_messages(store, task_id, start, turns=turns, idle=heartbeat))

    @router.get(
        "/api/stream",
        summary="Stream task changes: created, status moved (Server-Sent Events)",
        response_class=EventSourceResponse,
        response_model=None,
        responses={
            200: {"content": {"text/event-stream": {}}, "description": "Each change, its id its position."},
            400: {"description": "Last-Event-ID or after is not a whole number."},
        },
    )
    async def global_stream(
        after: str | None = Query(default=None, description="Resume after this position."),
        last_event_id: str | None = Header(default=None, alias="Last-Event-ID"),
    ) -> EventSourceResponse:
        return respond(task_change_messages(store, cursor(last_event_id, after), turns=turns, idle=heartbeat))

    return router

"""Resource updates from the store's change feed, to every client that subscribed.

A client subscribes to a task's URI (its document, or its events) in either of
the protocol's two ways, and both are served:

- ``subscriptions/listen`` (protocol 2026-07-28, what the SDK's `Client` opens
  with ``client.listen(resource_subscriptions=[...])``): the stream lasts as long as
  the request; `TaskWatch.listen_middleware` sees its URIs come and go.
- ``resources/subscribe`` / ``resources/unsubscribe`` (earlier protocol
  versions, Claude Desktop and other clients of that era): `TaskWatch.subscribe`.

For each task someone watches, one asyncio task follows the store's change feed
on that task's events (PostgreSQL: NOTIFY, from any process; SQLite: a poll
every 0.2 s) and, when the task or its events changed, sends
``notifications/resources/updated`` for each watched URI of that task. Other
URIs (an agent's list, an artifact) may be subscribed to but are never updated.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)

from ..errors import InputError, RatchetError
from ..store import StateStore
from ..store.changes import events_topic
from ..views.documents import check_agent, task_agent
from ..views.uris import parse_uri

__all__ = ["TaskWatch"]

MAX_URIS = 100
"""The most URIs one listen stream, or one connection by resources/subscribe, may watch."""

IDLE_LOOK = 5.0
"""Seconds between looks at a watched task when its feed hears nothing (a safety net on PostgreSQL)."""

log = logging.getLogger(__name__)

# Where a connection keeps its resources/subscribe URIs (Connection.state is per-connection scratch).
_SUBSCRIBED_KEY = "ratchet.subscribed"
_CLEANUP_KEY = "ratchet.subscriptions_end_with_connection"

# A task's agent, updated time, status and newest event seq; None: no such task (any more).
_Mark = tuple[str, str, str, int] | None


@dataclass
class _Followed:
    """One task being followed: the URIs watched on it, the connections that asked the old way."""

    uris: Counter[str] = field(default_factory=Counter)
    connections: dict[str, set[Connection]] = field(default_factory=dict)
    runner: asyncio.Task[None] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # set once the task was first read


class TaskWatch:
    """Follows the tasks clients subscribed to, and tells them when one changed."""

    def __init__(self, store: StateStore, bus: SubscriptionBus) -> None:
        self._store = store
        self._bus = bus
        self._followed: dict[str, _Followed] = {}

    # ------------------------------------------------------------------ what is watched

    async def watch(self, uris: Iterable[str]) -> list[str]:
        """Watch `uris` (counted: each `watch` needs its `unwatch`); return those that name a task.

        Returns once each newly followed task's current state is read, so a
        change committed after it is told.
        """
        watched = []
        for uri in uris:
            task_id = _task_of(uri)
            if task_id is None:
                continue
            followed = self._followed.setdefault(task_id, _Followed())
            followed.uris[uri] += 1
            watched.append(uri)
            if followed.runner is None:
                followed.runner = asyncio.create_task(
                    self._follow(task_id, followed.ready), name=f"mcp watch {task_id}"
                )
            await followed.ready.wait()  # a watcher that came second waits for the same first look
        return watched

    def unwatch(self, uris: Iterable[str]) -> None:
        """Stop watching `uris` (once each); a task nobody watches is no longer followed."""
        for uri in uris:
            task_id = _task_of(uri)
            followed = self._followed.get(task_id) if task_id is not None else None
            if followed is None or followed.uris[uri] <= 0:
                continue
            followed.uris[uri] -= 1
            if followed.uris[uri] == 0:
                del followed.uris[uri]
            if not followed.uris and task_id is not None:
                del self._followed[task_id]
                if followed.runner is not None:
                    followed.runner.cancel()

    async def close(self) -> None:
        """Stop following every task."""
        runners = [f.runner for f in self._followed.values() if f.runner is not None]
        self._followed.clear()
        for runner in runners:
            runner.cancel()
        for runner in runners:
            with contextlib.suppress(asyncio.CancelledError):
                await runner

    # ------------------------------------------------------------------ the two ways to subscribe

    async def listen_middleware(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Watch the URIs of a ``subscriptions/listen`` stream while it lasts."""
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        try:
            params = SubscriptionsListenRequestParams.model_validate(ctx.params or {}, by_name=False)
            uris = list(params.notifications.resource_subscriptions or ())
        except ValueError:  # the handler answers the malformed request itself
            uris = []
        if len(uris) > MAX_URIS:
            raise MCPError(
                INVALID_PARAMS, f"{len(uris)} resource subscriptions in one stream; at most {MAX_URIS}"
            )
        watched = await self.watch(uris)
        try:
            return await call_next(ctx)
        finally:
            self.unwatch(watched)

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        """``resources/subscribe``: watch the URI for this connection until it unsubscribes or closes."""
        uri = str(params.uri)
        _check(uri)
        task_id = _task_of(uri)
        if task_id is None:
            return EmptyResult()
        await self._check_agent(uri, task_id)
        connection = _connection_of(ctx)
        if _CLEANUP_KEY not in connection.state:  # once per connection: its subscriptions end with it
            connection.state[_CLEANUP_KEY] = True
            connection.exit_stack.callback(self._forget, connection)
        subscribed: set[str] = connection.state.setdefault(_SUBSCRIBED_KEY, set())
        if uri not in subscribed and len(subscribed) >= MAX_URIS:
            raise MCPError(
                INVALID_PARAMS, f"this connection already watches {MAX_URIS} URIs, the most it may"
            )
        if uri not in subscribed:
            subscribed.add(uri)
            await self.watch([uri])
            self._followed[task_id].connections.setdefault(uri, set()).add(connection)
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        """``resources/unsubscribe``: stop watching the URI for this connection."""
        self._drop(_connection_of(ctx), str(params.uri))
        return EmptyResult()

    async def _check_agent(self, uri: str, task_id: str) -> None:
        """Refuse a URI that names a task under another agent, as reading it would."""
        address = parse_uri(uri)
        if address.kind != "task" or address.agent is None:
            return
        try:
            task = await self._store.get_task(task_id)
        except RatchetError:  # not there (yet): subscribing to it is allowed and never fires
            return
        try:
            check_agent(task, address.agent)
        except InputError as exc:
            raise MCPError(INVALID_PARAMS, exc.message) from None

    def _forget(self, connection: Connection) -> None:
        for uri in list(connection.state.get(_SUBSCRIBED_KEY, ())):
            self._drop(connection, uri)

    def _drop(self, connection: Connection, uri: str) -> None:
        subscribed: set[str] = connection.state.get(_SUBSCRIBED_KEY, set())
        if uri not in subscribed:
            return
        subscribed.discard(uri)
        task_id = _task_of(uri)
        followed = self._followed.get(task_id) if task_id is not None else None
        if followed is not None:
            followed.connections.get(uri, set()).discard(connection)
        self.unwatch([uri])

    # ------------------------------------------------------------------ following a task

    async def _follow(self, task_id: str, ready: asyncio.Event) -> None:
        try:
            async with self._store.changes(events_topic(task_id)) as feed:
                last = await self._mark(task_id)
                ready.set()
                while True:
                    await feed.wait(IDLE_LOOK)
                    mark = await self._mark(task_id)
                    if mark != last:
                        last = mark
                        await self._announce(task_id, None if mark is None else mark[0])
        except asyncio.CancelledError:
            raise
        except Exception:  # a store that failed: the subscribers hear no more, the server goes on
            log.exception("stopped following task %s for its subscribers", task_id)
        finally:
            ready.set()

    async def _mark(self, task_id: str) -> _Mark:
        try:
            async with self._store.reading() as tx:
                task = await tx.get_task(task_id)
                events = await tx.last_events(task_id, 1)
        except InputError:  # no such task (yet, or any more)
            return None
        except RatchetError as exc:
            log.warning("could not read task %s for its subscribers: %s", task_id, exc)
            return None
        newest = events[-1].seq if events else 0
        return (task_agent(task), _stamp(task.updated_at), str(task.status), newest)

    async def _announce(self, task_id: str, agent: str | None) -> None:
        followed = self._followed.get(task_id)
        if followed is None:
            return
        for uri in list(followed.uris):
            if not _names_agent(uri, agent):  # a URI read refuses is never updated either
                continue
            await self._bus.publish(ResourceUpdated(uri=uri))
            for connection in list(followed.connections.get(uri, ())):
                await connection.send_resource_updated(uri)  # never raises: a closed one drops it


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection a request came on: the SDK's request context has no public way to it yet."""
    connection: Connection = ctx.session._connection
    return connection


def _stamp(moment: dt.datetime) -> str:
    return moment.isoformat()


def _names_agent(uri: str, agent: str | None) -> bool:
    """Whether `uri` names the task under its own agent (an events URI names no agent)."""
    address = parse_uri(uri)
    return address.kind != "task" or address.agent == agent


def _check(uri: str) -> None:
    """Refuse a malformed ``state://`` URI (one line, as an MCP error)."""
    if uri.startswith("state://"):
        try:
            parse_uri(uri)
        except InputError as exc:
            raise MCPError(INVALID_PARAMS, exc.message) from None


def _task_of(uri: str) -> str | None:
    """The task whose changes update `uri`: a task's document or its events; None for others."""
    try:
        address = parse_uri(uri)
    except InputError:
        return None
    return address.task if address.kind in ("task", "events") else None

"""The PostgreSQL change feed: ``LISTEN`` on a connection of its own.

Writes notify inside their transaction (so a notification arrives only if,
and when, the write commits): channel ``ratchet_triggers`` for new work,
``ratchet_events`` for events, ``ratchet_tasks`` for the task-change log,
``ratchet_streams`` for the tasks' streams;
the payload is the change-feed topic. A
listener listens only on the channels its process's feeds need (a worker
hears no events, an event follower no triggers: each notification costs every
listening connection some work on the server), and publishes each payload to
this process's feeds. When its connection is lost it reconnects with backoff and then wakes
every feed once, since notifications sent in between are gone; it says so once when it loses
the server and once when it has it back (after a failover, on a multi-host URL, the new primary),
not once an attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import psycopg

from .. import catalogue
from .schema import DIALECT, Target, connect, keepalives

__all__ = ["ChangeListener", "channels_of"]

EVERY_TOPIC = "*"
_BACKOFF = (0.05, 2.0)  # first and longest pause between reconnection attempts, seconds

log = logging.getLogger(__name__)

_CHANNELS = {
    "triggers": "listen_triggers",
    "events": "listen_events",
    "tasks": "listen_tasks",
    "streams": "listen_streams",
}


def channels_of(topics: Iterable[str]) -> frozenset[str]:
    """The channels (named by their LISTEN query) that carry `topics`."""
    kinds = {topic.partition(":")[0] for topic in topics}
    return frozenset(_CHANNELS[kind] for kind in kinds if kind in _CHANNELS)


class ChangeListener:
    """Hears the store's notifications and hands each topic to `publish`.

    Args:
        conninfo: the store's connection string.
        target: where it points, for messages.
        publish: called with the topics heard (``"*"`` after a reconnection).
        options: connection options (such as ``connect_timeout``).
        channels: the LISTEN queries to run (see `channels_of`).
    """

    def __init__(
        self,
        conninfo: str,
        target: Target,
        publish: Callable[[Iterable[str]], None],
        options: dict[str, Any],
        channels: frozenset[str],
    ) -> None:
        self.channels = channels
        self._conninfo = conninfo
        self._target = target
        self._publish = publish
        self._options = keepalives(conninfo)
        self._options.update(options)
        self._lock = asyncio.Lock()
        self._conn: psycopg.AsyncConnection | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen from now on; returns once ``LISTEN`` is in effect. Calling it again does nothing.

        Raises:
            StoreError: the first connection could not be made.
        """
        async with self._lock:
            if self._task is None:
                self._conn = await self._listen()
                self._task = asyncio.create_task(self._hear(), name=f"ratchet listener {self._target}")

    async def stop(self) -> None:
        """Stop listening and close the connection."""
        async with self._lock:
            task, self._task = self._task, None
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            conn, self._conn = self._conn, None
            if conn is not None:
                await conn.close()

    async def _listen(self) -> psycopg.AsyncConnection:
        conn = await connect(self._conninfo, self._target, **self._options)
        try:
            for channel in sorted(self.channels):
                await conn.execute(catalogue.queries(DIALECT)[channel])
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _hear(self) -> None:
        pause = _BACKOFF[0]
        lost_at: float | None = None  # when the connection was lost, while it is
        attempts = 0
        while True:
            conn = self._conn
            try:
                if conn is None or conn.closed:
                    attempts += 1
                    conn = self._conn = await self._listen()
                    self._publish([EVERY_TOPIC])  # whatever was notified meanwhile is lost
                    pause = _BACKOFF[0]
                    if lost_at is not None:
                        log.warning(
                            "the change feed listens on PostgreSQL %s again, after %.1f s and %d attempt(s)",
                            self._target,
                            time.monotonic() - lost_at,
                            attempts,
                        )
                        lost_at, attempts = None, 0
                async for notification in conn.notifies():
                    self._publish([notification.payload])
            except Exception as exc:
                if lost_at is None:  # said once an outage, not once an attempt (a failover takes seconds)
                    lost_at = time.monotonic()
                    log.warning(
                        "the change feed lost PostgreSQL %s (%s); reconnecting, with a pause growing to %g s",
                        self._target,
                        self._target.hide(_first_line(exc)),
                        _BACKOFF[1],
                    )
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
                self._conn = None
                await asyncio.sleep(pause)
                pause = min(pause * 2, _BACKOFF[1])


def _first_line(exc: Exception) -> str:
    """What went wrong, on one line (libpq adds lines of hints: "This probably means ...")."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

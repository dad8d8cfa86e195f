"""Noticing that the database failed over, saying what that may have cost, and moving on.

A failover breaks every connection to the old primary at once. When one
breaks, `IdleCheck` tests the pool's idle ones (in the background), so the
broken ones are replaced, on a multi-host URL by connections to whichever
server now takes writes, rather than each failing a transaction in turn when
it is next handed out.

A standby promoted to primary starts a new WAL timeline. Each connection the
store's pool makes reads where it landed (`server_timeline`: the timeline,
the server's replication settings, its port; one query, when the connection
is made, never on the hot path). When a connection finds another timeline
than the store saw before, the database moved under it (a failover, or a
restore), and the store logs one warning naming what the server it wrote to
before promised about the commits it acknowledged:

- **synchronous** replication (``synchronous_standby_names`` set and
  ``synchronous_commit`` ``on``, ``remote_write`` or ``remote_apply``): a
  commit was acknowledged only once a standby had it, so nothing acknowledged
  is lost when that standby is the one promoted;
- **asynchronous**: commits the old primary acknowledged that had not reached
  the new one are gone. A task's journal may go back in time: its keyed calls
  run again under the same idempotency key, and a side-effect call without a
  key whose intent or result was lost may run again.

Only a process connected before and after the failover can tell: one started
afterwards sees one timeline only (docs/workers.md, "When the database fails
over").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from .. import catalogue
from .schema import DIALECT, Target

__all__ = ["FailoverWatch", "IdleCheck", "ServerState"]

log = logging.getLogger(__name__)

_DURABLE_LEVELS = frozenset({"on", "remote_write", "remote_apply"})  # a standby has the commit first


@dataclass(frozen=True)
class ServerState:
    """What a connection found: the server's timeline and replication settings."""

    timeline: int | None
    """The WAL timeline of a primary; None on a standby."""
    standby_names: str
    commit_level: str
    port: int | None

    @property
    def synchronous(self) -> bool:
        return bool(self.standby_names.strip()) and self.commit_level in _DURABLE_LEVELS

    @property
    def replication(self) -> str:
        kind = "synchronous" if self.synchronous else "asynchronous (or no)"
        return (
            f"{kind} replication (synchronous_standby_names={self.standby_names!r}, "
            f"synchronous_commit={self.commit_level})"
        )


class FailoverWatch:
    """Follows the timeline of the servers a store's connections reach; says when it changes."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.last: ServerState | None = None
        self.failovers = 0
        """How many times this store found the database on another timeline."""

    async def look(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Read where `conn` landed (the pool's ``configure``); a failure to read is no news."""
        try:
            cursor = await conn.execute(catalogue.queries(DIALECT)["server_timeline"])
            row = await cursor.fetchone()
        except psycopg.Error:
            return
        if row is None:
            return
        timeline, names, level, port = row
        self.saw(ServerState(None if timeline is None else int(timeline, 16), names or "", level or "", port))

    def saw(self, state: ServerState) -> None:
        before = self.last
        if state.timeline is None:  # a standby (a read-only store): no timeline to compare
            return
        self.last = state
        if before is None or before.timeline is None or before.timeline == state.timeline:
            return
        self.failovers += 1
        log.warning("%s", failover_message(self.target, before, state))


def failover_message(target: Target, before: ServerState, now: ServerState) -> str:
    """One line: the database moved to another timeline, and what the server before promised."""
    where = f"port {now.port}" if now.port else "the server it reaches now"
    said = (
        f"PostgreSQL {target}: the database failed over: the primary it reaches now ({where}) is on "
        f"WAL timeline {now.timeline}, where it was on timeline {before.timeline}. The primary before "
        f"ran {before.replication}: "
    )
    if before.synchronous:
        return said + (
            "every commit it acknowledged had reached a standby, so none is lost if the one promoted "
            "was that standby; a transaction cut off in flight was never acknowledged, and its task "
            "resumes from what its journal kept"
        )
    return said + (
        "commits it acknowledged that had not reached this server may have been lost: a task's "
        "journal may have gone back in time, its keyed calls run again under the same idempotency "
        "key, and a side-effect call without a key whose intent or result was lost may run again "
        '(docs/workers.md, "When the database fails over")'
    )


class IdleCheck:
    """Tests a pool's idle connections after one was lost: one test at a time, in the background."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def start(self, pool: AsyncConnectionPool) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._test(pool), name=f"{pool.name}: testing idle connections")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @staticmethod
    async def _test(pool: AsyncConnectionPool) -> None:
        with contextlib.suppress(Exception):  # a connection that fails the test is replaced: no more to do
            await pool.check()

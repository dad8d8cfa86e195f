"""The `StateStore` protocol: every record Ratchet keeps goes through it.

A store is opened from a URL (`open_store`). Its operations are defined once,
on `StoreOps` (ops.py); a store runs each one in a transaction of its own, and
``store.transaction()`` hands out a `StoreOps` bound to one transaction so that
several writes (a state change and the event that reports it) commit together
or not at all::

    async with store.transaction(fence=lease) as tx:
        await tx.update_task(task.transition(TaskStatus.COMPLETED))
        await tx.append_event(Event(task_id=task.id, kind="task", message="done"))

`fence` carries the writer's lease: the transaction raises `LeaseLost` before
writing anything if that lease is no longer the task's current one.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import copy
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any

from ..errors import ConflictError, SessionNotFound, StoreError
from ..model import Lease, Session
from .ops import StoreOps

__all__ = ["TRIGGERS", "ChangeFeed", "StateStore", "TransactionGate", "checkpoints_to_drop", "events_topic"]

TRIGGERS = "triggers"
"""The change-feed topic of new work: a trigger was queued or a lease released."""


def events_topic(task_id: str) -> str:
    """The change-feed topic of a task's events."""
    return f"events:{task_id}"

_HOLDING: ContextVar[frozenset[int]] = ContextVar("ratchet_open_transactions", default=frozenset())


class TransactionGate:
    """Lets one transaction at a time through a store's connection.

    Entering a store's transaction from inside one of its own (calling
    ``store.x()`` where ``tx.x()`` was meant) would wait forever for the
    lock; the gate raises a clear error instead.
    """

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def enter(self) -> None:
        holding = _HOLDING.get()
        if id(self) in holding:
            raise StoreError(
                "the store was called inside one of its own transactions; "
                "call the transaction's object (tx) instead"
            )
        await self._lock.acquire()
        _HOLDING.set(holding | {id(self)})

    def leave(self) -> None:
        _HOLDING.set(_HOLDING.get() - {id(self)})
        self._lock.release()


class ChangeFeed:
    """Wakes a waiter when something it watches may have changed (see `StateStore.changes`).

    A change published between two waits is not lost: the next `wait`
    returns at once.
    """

    def __init__(self, topics: Iterable[str], poll: float | None) -> None:
        self.topics = frozenset(topics)
        self.poll = poll
        self._changed = asyncio.Event()

    def notify(self) -> None:
        self._changed.set()

    async def wait(self, timeout: float) -> bool:
        """Wait for a change, at most `timeout` seconds; return whether one was published.

        On a store that cannot publish other processes' changes (SQLite),
        the wait also ends after the store's poll interval, so the caller
        looks again.
        """
        if self.poll is not None:
            timeout = min(timeout, self.poll)
        try:
            async with asyncio.timeout(max(timeout, 0)):
                await self._changed.wait()
        except TimeoutError:
            return False
        self._changed.clear()
        return True


_READ_OPS = (
    "get_task",
    "list_tasks",
    "list_orphaned_tasks",
    "list_steps",
    "get_op",
    "list_ops",
    "list_messages",
    "list_events",
    "last_events",
    "get_artifact",
    "read_artifact",
    "list_artifacts",
    "list_triggers",
    "next_due_at",
    "get_checkpoint",
    "latest_checkpoint",
    "list_checkpoints",
    "get_approval",
    "list_approvals",
    "get_session",
    "list_sessions",
    "get_lease",
    "lease_history",
)
_WRITE_OPS = (
    *(name for name in sorted(StoreOps.__abstractmethods__) if name not in _READ_OPS),
    "claim_tasks",
)


class StateStore(StoreOps):
    """A store opened from a URL. Each operation runs in a transaction of its own.

    Write operations take a keyword ``fence=lease``: the write is refused with
    `LeaseLost` when that lease is no longer the task's current one.
    """

    url: str

    change_poll: float | None = 0.2
    """How often a change feed looks again: None when the store publishes every writer's changes."""

    @contextlib.asynccontextmanager
    async def changes(self, *topics: str) -> AsyncIterator[ChangeFeed]:
        """Watch topics (`TRIGGERS`, ``events_topic(task_id)``) for the block.

        The feed hears of changes committed after it opened: look at the
        store after opening it, then wait.
        """
        feeds: set[ChangeFeed] = self.__dict__.setdefault("_feeds", set())
        await self._start_listening(topics)
        feed = ChangeFeed(topics, self.change_poll)
        feeds.add(feed)
        try:
            yield feed
        finally:
            feeds.discard(feed)

    def publish(self, topics: Iterable[str]) -> None:
        """Wake this process's feeds that watch any of `topics` (``"*"`` wakes them all)."""
        topics = set(topics)
        if not topics:
            return
        for feed in self.__dict__.get("_feeds", ()):
            if "*" in topics or feed.topics & topics:
                feed.notify()

    async def _start_listening(self, topics: Iterable[str]) -> None:
        """Hear other processes' changes on `topics` from now on, if the store can (called as each feed opens)."""

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect, check the schema and migrate it to the current version.

        Raises:
            StoreNotFound: the database does not exist and the store was
                opened with ``create=False``.
            NotARatchetDatabase: the database holds something else.
            SchemaTooNew: a newer Ratchet wrote it.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections; the store can't be used afterwards."""

    @abc.abstractmethod
    def transaction(self, *, fence: Lease | None = None) -> AbstractAsyncContextManager[StoreOps]:
        """Return a context manager giving operations that commit together.

        Everything done through it commits when the block ends and is rolled
        back when it raises.

        Raises:
            LeaseLost: on entry, when `fence` is not the task's current lease.
        """

    @abc.abstractmethod
    def reading(self) -> AbstractAsyncContextManager[StoreOps]:
        """Return a context manager giving operations for a consistent read."""

    @abc.abstractmethod
    async def schema_version(self) -> int:
        """Return the schema version the database is at (0 for the memory store, which has none)."""

    async def update_session_state(
        self,
        session_id: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        attempts: int = 20,
    ) -> Session:
        """Apply `change` to the session's state and write it, retrying on conflict.

        `change` receives a copy of the current state (empty for a new
        session) and returns the new one; it runs again on a fresh copy when
        another writer got in first, so no writer's change is lost.

        Raises:
            ConflictError: still conflicting after `attempts` tries.
        """
        for _ in range(attempts):
            try:
                current = await self.get_session(session_id)
            except SessionNotFound:
                current = Session(id=session_id)
            new_state = change(copy.deepcopy(current.state))
            try:
                return await self.put_session(current.model_copy(update={"state": new_state}))
            except ConflictError:
                continue
        raise ConflictError(f"session {session_id!r} kept changing; gave up after {attempts} tries")

    async def __aenter__(self) -> StateStore:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _delegate(name: str, writes: bool) -> Callable[..., Awaitable[Any]]:
    if writes:

        async def op(self: StateStore, *args: Any, fence: Lease | None = None, **kwargs: Any) -> Any:
            async with self.transaction(fence=fence) as tx:
                return await getattr(tx, name)(*args, **kwargs)

    else:

        async def op(self: StateStore, *args: Any, **kwargs: Any) -> Any:
            async with self.reading() as tx:
                return await getattr(tx, name)(*args, **kwargs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = getattr(StoreOps, name).__doc__
    return op


for _name in (*_READ_OPS, *_WRITE_OPS):
    setattr(StateStore, _name, _delegate(_name, _name in _WRITE_OPS))
abc.update_abstractmethods(StateStore)


def checkpoints_to_drop(
    ages: Sequence[tuple[str, int, dt.datetime]],
    *,
    keep: int | None,
    older_than: dt.timedelta | None,
    now: dt.datetime,
) -> list[tuple[str, int]]:
    """Pick the checkpoints rotation deletes, from ``(task_id, number, created_at)`` rows.

    Per task, the newest is always kept; of the others, those past `keep`
    (counting from the newest) and those created before ``now - older_than``
    are dropped.
    """
    by_task: dict[str, list[tuple[int, dt.datetime]]] = {}
    for task_id, number, created_at in ages:
        by_task.setdefault(task_id, []).append((number, created_at))
    cutoff = None if older_than is None else now - older_than
    doomed = []
    for task_id, rows in by_task.items():
        rows.sort(reverse=True)
        for rank, (number, created_at) in enumerate(rows):
            too_many = keep is not None and rank >= keep
            too_old = cutoff is not None and created_at < cutoff
            if rank > 0 and (too_many or too_old):
                doomed.append((task_id, number))
    return doomed

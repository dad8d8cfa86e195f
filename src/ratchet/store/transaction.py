"""The one transaction class every store shares, and the gate in front of it.

`Transaction` refuses a transaction opened inside another of the same store,
checks the writer's fence, commits or rolls back, and publishes the change-feed
topics a committed transaction touched. What differs between stores (how a
transaction begins and ends) sits behind `Transactional._begin` and `Opened`.

A transaction made ``alone=True`` holds one write and nothing after it (the
journal's intent, or its outcome): a store may commit that write as one
statement of its own, with no ``BEGIN`` or ``COMMIT`` around it
(`Transactional._begin_alone`; docs/durability.md, "One statement a journal write").

A write fenced by a lease first writes the results waiting to ride on that
lease's next commit (store/ride_along.py), and tells them once it committed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Protocol

from ..errors import StoreError
from ..records import Lease
from .group_commit import GroupCommit, Member
from .ops import StoreOps
from .ride_along import RideAlong, Rider, tell, write

__all__ = ["Opened", "Transaction", "TransactionGate", "Transactional"]


class TransactionGate:
    """Refuses a store's transaction opened inside another of its own, and lets one through at a time.

    Entering a store's transaction from inside one of its own (calling
    ``store.x()`` where ``tx.x()`` was meant) would wait forever for the
    connection the outer one holds; the gate raises a clear error instead.
    A store on one connection (SQLite, memory) is `exclusive`: its
    transactions take turns. A pooled store lets them run at once.
    """

    def __init__(self, *, exclusive: bool) -> None:
        self._lock = asyncio.Lock() if exclusive else None
        # Whether the running task (and the tasks it starts) is inside one of this store's
        # transactions: a flag per gate, so a transaction sets one value, not a set of stores.
        self._inside: ContextVar[bool] = ContextVar(f"ratchet_in_transaction_{id(self)}", default=False)

    async def enter(self) -> None:
        if self._inside.get():
            raise _nested()
        if self._lock is not None:
            await self._lock.acquire()
        self._inside.set(True)

    def hold(self) -> None:
        """Refuse a nested transaction, as `enter`, but without taking the turn (a group holds it)."""
        if self._inside.get():
            raise _nested()
        self._inside.set(True)

    def leave(self, *, lock: bool = True) -> None:
        self._inside.set(False)
        if lock and self._lock is not None:
            self._lock.release()

    async def acquire(self) -> None:
        if self._lock is not None:
            await self._lock.acquire()

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()


def _nested() -> StoreError:
    return StoreError(
        "the store was called inside one of its own transactions; call the transaction's object (tx) instead"
    )


class Opened(Protocol):
    """A transaction a store began: the operations bound to it, and how to end it."""

    @property
    def ops(self) -> StoreOps: ...

    @property
    def touched(self) -> set[str]:
        """The change-feed topics its writes touched."""
        ...

    async def end(self, *, commit: bool) -> None:
        """Commit (or roll back) and give back what the transaction held."""
        ...


class Transactional(Protocol):
    """What `Transaction` needs of a store."""

    _gate: TransactionGate
    _groups: GroupCommit | None
    _ride_along: RideAlong

    async def _begin(self, *, write: bool) -> Opened: ...

    async def _begin_alone(self) -> Opened:
        """Start a write transaction that will hold one write, its last statement."""
        ...

    def publish(self, topics: Iterable[str]) -> None: ...


class Transaction:
    """``async with``: one transaction of a store, committed when the block ends, rolled back on error."""

    __slots__ = ("_alone", "_fence", "_grouped", "_member", "_opened", "_riders", "_store", "_write")

    def __init__(
        self,
        store: Transactional,
        *,
        write: bool,
        fence: Lease | None,
        alone: bool = False,
        grouped: bool = True,
    ) -> None:
        self._store = store
        self._write = write
        self._fence = fence
        self._alone = alone
        self._grouped = grouped  # False: it never joins nor leads a group (store/group_commit)
        self._opened: Opened | None = None
        self._member: Member | None = None
        self._riders: list[Rider] | None = None

    async def __aenter__(self) -> StoreOps:
        if self._fence is not None and self._store._ride_along:  # results riding on this commit
            self._riders = self._store._ride_along.take(self._fence)
            if self._riders is not None:
                try:
                    return await self._enter_with_riders(self._riders)
                except BaseException as error:
                    self._hand_back(error)
                    raise
        return await self._enter()

    async def _enter(self) -> StoreOps:
        if self._write and self._grouped and self._store._groups is not None:  # it may share its commit
            # One statement alone joins with no savepoint (SQLite); riders make it more than one.
            alone = self._alone and self._riders is None
            self._member = await self._store._groups.enter(self._fence, alone=alone)
            return self._member.ops
        gate = self._store._gate
        await gate.enter()
        try:
            if self._alone and self._riders is None:
                opened = self._opened = await self._store._begin_alone()
            else:
                opened = self._opened = await self._store._begin(write=self._write)
        except BaseException:
            gate.leave()
            raise
        if self._fence is not None:
            try:
                await opened.ops.check_fence(self._fence)
            except BaseException:
                with contextlib.suppress(Exception):  # as in __aexit__: the fence's error is the one to see
                    await self._end(commit=False)
                raise
        return opened.ops

    async def _enter_with_riders(self, riders: list[Rider]) -> StoreOps:
        ops = await self._enter()
        try:
            await write(ops, riders)
        except BaseException as error:
            self._riders = None  # their own write failed: dropped, their calls stay in doubt
            await self.__aexit__(type(error), error, None)
            raise
        return ops

    def _hand_back(self, error: BaseException | None) -> None:
        riders, self._riders = self._riders, None
        if riders is not None:
            assert self._fence is not None
            self._store._ride_along.hand_back(self._fence, riders, error)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if self._riders is None:
            await self._exit(exc_type)
            return
        try:
            await self._exit(exc_type)
        except BaseException as error:
            self._hand_back(error)
            raise
        if exc_type is not None:
            self._hand_back(exc if isinstance(exc, BaseException) else None)
            return
        riders, self._riders = self._riders, None
        tell(riders)

    async def _exit(self, exc_type: type[BaseException] | None) -> None:
        if self._member is not None:
            member, self._member = self._member, None
            await member.leave(failed=exc_type is not None)
            return
        if exc_type is None:
            await self._end(commit=True)
            return
        # The block's error says what went wrong; a rollback failing after it (the database
        # already rolled back, the connection is gone) must not take its place.
        with contextlib.suppress(Exception):
            await self._end(commit=False)

    async def _end(self, *, commit: bool) -> None:
        opened, self._opened = self._opened, None
        assert opened is not None
        try:
            await opened.end(commit=commit)
        finally:
            self._store._gate.leave()
        if commit and opened.touched:  # most journal writes touch no feed: nothing to wake
            self._store.publish(opened.touched)

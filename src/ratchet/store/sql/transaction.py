"""`SqlTransaction`: an open transaction of a SQL store, its driver and the operations on it.

Both SQL stores hand these to the shared `Transaction` (store/transaction.py). The
SQLite store keeps one for its one connection and reuses it; the PostgreSQL
store makes one per pooled connection it takes, and gives the connection
back when the transaction ends (`release`). Other write transactions may join
one (`joiner`, in a savepoint) and share its commit (store/group_commit).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..group_commit import Joinable
from .driver import Driver
from .ops import SqlOps

__all__ = ["SqlTransaction"]


@dataclass(slots=True)
class SqlTransaction:
    driver: Driver
    ops: SqlOps
    release: Callable[[Driver], Awaitable[None]] | None = None
    """Gives the driver's connection back once the transaction ended; None when it is the store's own."""
    held: object | None = None
    """A group member's statements the driver holds back for the commit (`Driver.hold_member`)."""
    saved: bool = False
    """A group member's: it began in a savepoint of its own (`savepoint`)."""

    @property
    def touched(self) -> set[str]:
        return self.ops.touched

    async def begin(self, *, write: bool) -> SqlTransaction:
        """Start the transaction (giving the connection back if that fails); return it."""
        self.ops.touched = set()
        self.ops.noted_changes = []
        try:
            await self.driver.begin(write=write)
        except BaseException:
            if self.release is not None:
                await self.release(self.driver)
            raise
        return self

    async def end(self, *, commit: bool) -> None:
        try:
            if commit:
                if self.ops.noted_changes:  # most writes (the journal's) change no task's status
                    try:
                        await self.ops.log_task_changes()
                    except BaseException:
                        await self.driver.rollback()
                        raise
                await self.driver.commit()
            else:
                self.ops.noted_changes = []
                await self.driver.rollback()
        finally:
            if self.release is not None:
                await self.release(self.driver)

    # ------------------------------------------------------------------ group commit (store/group_commit)

    def joiner(self) -> SqlTransaction:
        return SqlTransaction(self.driver, SqlOps(self.driver))

    def adopt(self, member: Joinable) -> None:
        assert isinstance(member, SqlTransaction)
        self.ops.noted_changes += member.ops.noted_changes
        self.ops.touched |= member.ops.touched

    async def flush(self) -> None:
        await self.driver.flush()

    def hold(self) -> bool:
        # Only a member that noted nothing: one the commit refuses must leave no change or topic behind.
        if self.ops.noted_changes or self.ops.touched:
            return False
        self.held = self.driver.hold_member()
        return self.held is not None

    def refusal(self) -> BaseException | None:
        return None if self.held is None else self.driver.refusal(self.held)

    async def savepoint(self, *, alone: bool = False) -> None:
        if alone and self.driver.atomic_statements:
            # Its one write is one statement: failed or refused, it wrote nothing (nothing to roll back
            # to), and a savepoint would cost more than the write (each write made under one copies the
            # pages it changes aside: bench/HISTORY.md, "Issue 34, group commit on SQLite").
            return
        await self.driver.execute("savepoint")
        self.saved = True

    async def roll_back_to_savepoint(self) -> None:
        if self.saved:  # else the newest savepoint of the name is an earlier member's
            await self.driver.execute("rollback_to_savepoint")

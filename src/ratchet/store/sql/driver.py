"""The driver: one connection to an SQL database, running its dialect's named queries.

`SqlOps` (ops.py) writes every store operation once, in terms of a driver;
each SQL store (sqlite/store.py, postgresql/store.py) is a driver plus how it
connects. A driver knows nothing of tasks or leases: it runs the query of a
name from its dialect's catalogue (<dialect>/queries.sql) with named parameters
(the journal's hottest statements, `write` and `check`, bind theirs by position),
and turns every error of its database library into a `StoreError` (a unique
key broken becomes `DuplicateRecord`), so nothing above it sees the library.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Driver", "Params", "Row"]

Row = Sequence[Any]
"""One row of a query's result, its columns in the order the query names them."""

Params = Mapping[str, Any]
"""A query's named parameters; a dialect's query may leave some unused."""


class Driver(abc.ABC):
    """One connection, in one transaction at a time."""

    # ------------------------------------------------------------------ queries

    @abc.abstractmethod
    async def execute(self, name: str, params: Params | None = None) -> int:
        """Run the named query; return how many rows it changed."""

    @abc.abstractmethod
    async def execute_many(self, name: str, params: Sequence[Params]) -> None:
        """Run the named query once per parameter set."""

    @abc.abstractmethod
    async def one(self, name: str, params: Params | None = None) -> Row | None:
        """Run the named query; return its first row, or None."""

    @abc.abstractmethod
    async def all(self, name: str, params: Params | None = None) -> list[Row]:
        """Run the named query; return every row."""

    @abc.abstractmethod
    async def write(self, name: str, values: Sequence[Any], refused: Callable[[], BaseException]) -> None:
        """Run the named write with positional parameters; raise ``refused()`` if it changed no row.

        For the statements every journaled call runs: binding by position
        costs less than by name. A dialect whose query raises inside the
        database when it changes nothing (its own SQLSTATE) may send it with
        the transaction's next statement or its commit, in one round trip:
        then ``refused()`` is raised there, and nothing of the transaction is
        kept.
        """

    @abc.abstractmethod
    async def check(self, name: str, values: Sequence[Any], failure: Callable[[], BaseException]) -> None:
        """Run the named check query; raise ``failure()`` unless it holds.

        The check holds when the query returns a row whose first column is
        true. A dialect whose query raises inside the database instead (its
        own SQLSTATE) may send it with the transaction's next statement, in
        one round trip: then ``failure()`` is raised by that statement, and
        nothing of the transaction is kept.
        """

    @abc.abstractmethod
    async def lock(self, key: str) -> None:
        """Hold, until the transaction ends, a lock that other transactions taking `key` wait for.

        Rows numbered per owner (a task's events, a thread's messages) take
        the next number under it, so two writers never pick the same one.
        """

    # ------------------------------------------------------------------ transactions

    @abc.abstractmethod
    async def begin(self, *, write: bool) -> None:
        """Start a transaction: for writing, or for a consistent read."""

    @abc.abstractmethod
    async def commit(self) -> None:
        """Commit the transaction (after a failed commit, nothing of it is kept)."""

    @abc.abstractmethod
    async def rollback(self) -> None:
        """Roll the transaction back; never raises for a connection that is already lost."""

    atomic_statements = False
    """Whether a statement that fails leaves the transaction as it was, only its own changes undone.

    SQLite's do; on PostgreSQL a failed statement aborts the transaction. A
    group commit's member of one write (`SqlTransaction.savepoint`) needs no
    savepoint where they do.
    """

    async def flush(self) -> None:
        """Send the statements held back to go with the next one, and raise their errors.

        A driver that sends each statement at once has none. Group commit
        (store/group_commit) flushes at the end of each member's block, so that a
        member's errors are raised in its own turn, not in the next member's.
        """
        return  # nothing held back: each statement was sent as it ran

    def hold_member(self) -> object | None:
        """Keep what a group member's block held back to go with the commit; return what to ask `refusal`.

        Called as a member's block ends (it began in a savepoint): a driver
        that holds statements back may send the whole group's with its
        commit, in one round trip, rolling back to a member's savepoint the
        member whose statement failed (the others commit). None: the driver
        cannot, and the member is flushed in its turn instead.
        """
        return None

    def refusal(self, key: object) -> BaseException | None:
        """After the commit: why the held member `key` (`hold_member`'s) was rolled back, or None."""
        return None

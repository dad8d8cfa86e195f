"""`ListingReads`: where a store's task listings read, and how far behind that copy was (`ReplicaRead`).

A listing (`ratchet tasks`, ``GET /api/tasks`` and the dashboard's list
and counts) may read a copy of the store that lags, so that people looking
do not compete with the workers for the primary: a PostgreSQL store given
``?read_url=`` reads its listings on that read replica. Nothing else does:
every write, everything a worker reads, and a task read by its id (a task
just submitted is found at once) go to the store itself. A store with no
replica (memory, SQLite, PostgreSQL without ``read_url``) lists from itself,
and says nothing about staleness (docs/stores.md, "Read replicas").
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from ..ops import StoreOps
from ..transaction import Transaction

__all__ = ["ListingReads", "ReadReplica", "ReplicaRead"]


@dataclass(frozen=True)
class ReplicaRead:
    """What a listing of a store with a read replica came from.

    ``behind`` is how many seconds behind its primary the replica was as
    the listing began: every commit older than that is in the listing (0
    when it had replayed all it received; None when it cannot tell). When
    the replica could not be read, the listing came from the primary:
    ``error`` says why (one line, never a password).
    """

    server: str
    """The replica's host and port."""
    behind: float | None = None
    error: str | None = None

    @property
    def used(self) -> bool:
        """Whether the listing came from the replica (else from the primary)."""
        return self.error is None

    def describe(self) -> str:
        """One line for people: ``from replica localhost:5433, 0.4 s behind``."""
        if self.error is not None:
            return f"from the primary: replica {self.server} could not be read ({self.error})"
        if self.behind is None:
            return f"from replica {self.server}, behind by an unknown time"
        return f"from replica {self.server}, {self.behind:.1f} s behind"

    def as_json(self) -> dict[str, object]:
        """The ``replica`` field of a listing's JSON."""
        return {"server": self.server, "used": self.used, "behind_seconds": self.behind, "error": self.error}


class ListingReads(abc.ABC):
    """How a store's listings read: in a consistent read of the store itself, unless it has a replica."""

    @abc.abstractmethod
    def reading(self) -> Transaction:
        """A consistent read of the store itself (`StateStore.reading`)."""

    @contextlib.asynccontextmanager
    async def listing(self) -> AsyncIterator[tuple[StoreOps, ReplicaRead | None]]:
        """A consistent read for a task listing, and where it came from.

        Yields ``(tx, replica)``: `replica` is None when the store has no
        read replica (the read is the store's own, never stale); else what
        the listing came from and how far behind that was (`ReplicaRead`).
        Use it for listings only: a read that must see the latest commit
        (a task by its id, anything a worker decides on) is the store's.
        """
        async with self.reading() as tx:
            yield tx, None


class ReadReplica(Protocol):
    """A copy of a store that its listings read (a PostgreSQL store's ``?read_url=``).

    Declared here so the store that holds one needs not import its kind
    (store/sql/postgresql/replica.py, which builds on that store).
    """

    def listing(
        self, primary: ListingReads
    ) -> contextlib.AbstractAsyncContextManager[tuple[StoreOps, ReplicaRead]]:
        """A consistent read on the replica, or on `primary` when the replica cannot be read."""
        ...

    async def close(self) -> None:
        """Close what the replica has open."""
        ...

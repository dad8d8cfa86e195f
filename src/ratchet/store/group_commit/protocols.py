"""What a group commit needs of its store and of the transactions it shares (`Joinable`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..ops import StoreOps

__all__ = ["Gate", "GroupStore", "Joinable"]


class Joinable(Protocol):
    """A transaction a store began that other transactions can join (`SqlTransaction`)."""

    @property
    def ops(self) -> StoreOps: ...

    @property
    def touched(self) -> set[str]: ...

    def joiner(self) -> Joinable:
        """The operations of another member of this transaction: same connection, changes noted apart."""
        ...

    def adopt(self, member: Joinable) -> None:
        """Take on a member's noted changes, to log and publish them with this transaction's commit."""
        ...

    async def flush(self) -> None:
        """Send what the driver held back, raising its errors (see `Driver.flush`)."""
        ...

    def hold(self) -> bool:
        """Leave what the member's block held back to go with the commit (`Driver.hold_member`).

        False: the store cannot (or the member noted changes); it is flushed in its turn instead.
        """
        ...

    def refusal(self) -> BaseException | None:
        """After the commit, for a member that `hold` kept: why its writes were rolled back, or None."""
        ...

    async def savepoint(self, *, alone: bool = False) -> None:
        """Begin the member's block in a savepoint of its own (its rollback undoes only its writes).

        `alone` (one write and nothing after it): a store on which a failed
        statement changes nothing may skip it; that member's write is then
        undone by nothing, as alone it is committed at once.
        """
        ...

    async def roll_back_to_savepoint(self) -> None:
        """Undo the member's writes back to its savepoint (none taken: nothing to undo)."""
        ...

    async def end(self, *, commit: bool) -> None: ...


class Gate(Protocol):
    """The store's `TransactionGate`, as a group uses it."""

    def hold(self) -> None: ...

    def leave(self, *, lock: bool = True) -> None: ...

    async def acquire(self) -> None: ...

    def release(self) -> None: ...


class GroupStore(Protocol):
    """What a group needs of its store (whose write transactions are `Joinable`)."""

    @property
    def _gate(self) -> Gate: ...

    @property
    def exclusive(self) -> bool: ...

    async def _begin(self, *, write: bool) -> object: ...

    def publish(self, topics: Iterable[str]) -> None: ...

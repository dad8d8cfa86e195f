"""`OwnTransactions`: how `StateStore`'s wrappers run an operation, each in a transaction of its own.

The wrappers of a concept declared apart on the interface sit in a mixin of
their own (leases.py, langgraph.py); each runs its operation through
`_read` or `_write`, which `StateStore` (store.py) implements.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ...records import Lease
from ..ops import StoreOps

__all__ = ["OwnTransactions"]

_R = TypeVar("_R")


class OwnTransactions(abc.ABC):
    """Running one operation in a transaction of its own: a consistent read, or a write behind a fence."""

    @abc.abstractmethod
    async def _read(self, op: Callable[[StoreOps], Awaitable[_R]]) -> _R:
        """Run `op` in a consistent read of its own; return what it returns."""

    @abc.abstractmethod
    async def _write(self, fence: Lease | None, op: Callable[[StoreOps], Awaitable[_R]]) -> _R:
        """Run `op` in a write transaction of its own, behind `fence` when given; return what it returns.

        Raises:
            LeaseLost: `fence` is not the task's current lease (nothing was done).
        """

    @abc.abstractmethod
    async def _write_apart(self, fence: Lease | None, op: Callable[[StoreOps], Awaitable[_R]]) -> _R:
        """As `_write`, but on a pooled store never in a group commit (a lease renewal: `renew_lease`)."""

"""The in-memory store: the reference behaviour, for tests and throwaway runs.

Its tables and operations are `MemoryOps` (ops.py). Transactions take turns;
each keeps an undo log and replays it backwards on rollback.
"""

from __future__ import annotations

from ...errors import StoreError
from ..base import StateStore
from .ops import MemoryOps

__all__ = ["MemoryStore"]


class MemoryStore(StateStore):
    """The store of the ``memory://`` URL; its data lives as long as the object."""

    change_poll = None  # every writer is in this process, and publishes what it commits

    def __init__(self) -> None:
        super().__init__()
        self.url = "memory://"
        self._closed = False
        self._ops = MemoryOps()

    async def open(self) -> None:
        """Nothing to connect to; the schema is always current."""

    async def close(self) -> None:
        """Refuse further use, as the other stores do; the data goes with the object."""
        self._closed = True

    async def _begin(self, *, write: bool) -> _MemoryTransaction:
        if self._closed:
            raise StoreError("the store memory:// is closed")
        self._ops.undo.clear()
        self._ops.touched = set()
        return _MemoryTransaction(self._ops)


class _MemoryTransaction:
    """The open transaction: the store's operations, whose undo log it keeps or plays back."""

    __slots__ = ("ops",)

    def __init__(self, ops: MemoryOps) -> None:
        self.ops = ops

    @property
    def touched(self) -> set[str]:
        return self.ops.touched

    async def end(self, *, commit: bool) -> None:
        if not commit:
            self.ops.roll_back()
        self.ops.undo.clear()

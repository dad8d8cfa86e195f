"""`LimitWrappers`: the shared limits (`LimitOps`) in `StateStore`, each in a transaction of its own.

What each does is documented on `LimitOps` (store/ops/limits.py). Its
writes take no ``fence=``: a key's limits and pacing are no task's, and a
queue's turn releases the lease it judges rather than writing behind it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from ...records import Lease, Limit
from ..ops.limits import LimitOps, Turn
from .wrapping import OwnTransactions

__all__ = ["LimitWrappers"]


class LimitWrappers(LimitOps, OwnTransactions):
    """Setting and reading limits, taking turns and slots, each in a transaction of its own."""

    async def set_limit(self, limit: Limit) -> Limit:
        return await self._write(None, lambda tx: tx.set_limit(limit))

    async def delete_limit(self, key: str) -> bool:
        return await self._write(None, lambda tx: tx.delete_limit(key))

    async def list_limits(self, keys: Sequence[str] | None = None) -> list[Limit]:
        return await self._read(lambda tx: tx.list_limits(keys))

    async def take_turn(
        self,
        keys: Sequence[str],
        holder: str,
        *,
        tokens: int = 0,
        keep_after: float = 0.0,
        now: dt.datetime | None = None,
    ) -> Turn:
        return await self._write(
            None, lambda tx: tx.take_turn(keys, holder, tokens=tokens, keep_after=keep_after, now=now)
        )

    async def settle_tokens(self, keys: Sequence[str], tokens: int) -> None:
        return await self._write(None, lambda tx: tx.settle_tokens(keys, tokens))

    async def block_limit(self, key: str, until: dt.datetime) -> None:
        return await self._write(None, lambda tx: tx.block_limit(key, until))

    async def take_slot(
        self, keys: Sequence[str], holder: str, lease: Lease, *, now: dt.datetime | None = None
    ) -> str | None:
        return await self._write(None, lambda tx: tx.take_slot(keys, holder, lease, now=now))

    async def release_slots(self, holder: str) -> None:
        return await self._write(None, lambda tx: tx.release_slots(holder))

    async def queue_turn(self, lease: Lease, *, now: dt.datetime | None = None) -> bool:
        return await self._write(None, lambda tx: tx.queue_turn(lease, now=now))

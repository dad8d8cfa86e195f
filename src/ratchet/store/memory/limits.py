"""The limits (`LimitOps`) of the memory store, as part of its operations."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from ...records import Lease, Limit, Task, utcnow
from ...records.limit import QUEUE_PREFIX
from ..ops.limits import TURN_KEPT, LimitOps, Turn, next_turn, paced
from .undo import UndoLog

if TYPE_CHECKING:
    from ..ops import StoreOps

__all__ = ["MemoryLimits"]


class MemoryLimits(LimitOps, UndoLog):
    """Each key's limit as JSON text; each kept turn's time; each slot's key, holder and lease.

    ``tasks`` is the memory store's task table.
    """

    tasks: dict[str, str]

    def __init__(self) -> None:
        super().__init__()
        self.limits: dict[str, str] = {}
        self.limit_turns: dict[str, dt.datetime] = {}
        self.limit_slots: dict[tuple[str, str], Lease] = {}

    def _limit(self, key: str) -> Limit | None:
        text = self.limits.get(key)
        return None if text is None else Limit.from_json(text)

    async def set_limit(self, limit: Limit) -> Limit:
        old = self._limit(limit.key)
        if old is not None:
            kept = {"blocked_until", "next_request_at", "next_token_at"}
            limit = limit.model_copy(update=old.model_dump(include=kept))
        self._set(self.limits, limit.key, limit.to_json())
        return limit

    async def delete_limit(self, key: str) -> bool:
        if key not in self.limits:
            return False
        self._delete(self.limits, key)
        return True

    async def list_limits(self, keys: Sequence[str] | None = None) -> list[Limit]:
        chosen = sorted(self.limits) if keys is None else sorted(set(keys) & set(self.limits))
        return [Limit.from_json(self.limits[key]) for key in chosen]

    async def take_turn(
        self,
        keys: Sequence[str],
        holder: str,
        *,
        tokens: int = 0,
        keep_after: float = 0.0,
        now: dt.datetime | None = None,
    ) -> Turn:
        now = now or utcnow()
        for old in [h for h, at in self.limit_turns.items() if at < now - TURN_KEPT]:
            self._delete(self.limit_turns, old)
        limits = await self.list_limits(keys)
        kept = self.limit_turns.get(holder)
        if kept is not None:
            if next_turn(limits, kept, blocked_only=True).at <= kept:
                if kept <= now + dt.timedelta(seconds=keep_after):  # waited for in place now
                    self._delete(self.limit_turns, holder)
                return Turn(kept, None)
            self._delete(self.limit_turns, holder)  # a block began since: a new turn after it
        turn = next_turn(limits, now)
        for limit in limits:
            self._set(self.limits, limit.key, paced(limit, turn.at, tokens).to_json())
        if turn.at > now + dt.timedelta(seconds=keep_after):
            self._set(self.limit_turns, holder, turn.at)
        return turn

    async def settle_tokens(self, keys: Sequence[str], tokens: int) -> None:
        for limit in await self.list_limits(keys):
            if limit.tpm and limit.next_token_at is not None and tokens:
                moved = limit.next_token_at + dt.timedelta(seconds=60 * tokens / limit.tpm)
                self._set(self.limits, limit.key, limit.model_copy(update={"next_token_at": moved}).to_json())

    async def block_limit(self, key: str, until: dt.datetime) -> None:
        limit = self._limit(key) or Limit(key=key)
        if limit.blocked_until is None or limit.blocked_until < until:
            self._set(self.limits, key, limit.model_copy(update={"blocked_until": until}).to_json())

    async def _live_slots(self, key: str, now: dt.datetime) -> int:
        store = cast("StoreOps", self)  # always mixed into a StoreOps, which keeps the leases
        count = 0
        for (slot_key, _), lease in self.limit_slots.items():
            current = await store.get_lease(lease.task_id) if slot_key == key else None
            if current is not None and current.token == lease.token and current.is_live(now):
                count += 1
        return count

    async def take_slot(
        self, keys: Sequence[str], holder: str, lease: Lease, *, now: dt.datetime | None = None
    ) -> str | None:
        now = now or utcnow()
        limited = [limit for limit in await self.list_limits(keys) if limit.concurrency]
        for limit in limited:
            assert limit.concurrency is not None
            if await self._live_slots(limit.key, now) >= limit.concurrency:
                return limit.key
        for limit in limited:
            self._set(self.limit_slots, (limit.key, holder), lease)
        return None

    async def release_slots(self, holder: str) -> None:
        for slot in [slot for slot in self.limit_slots if slot[1] == holder]:
            self._delete(self.limit_slots, slot)

    async def queue_turn(self, lease: Lease, *, now: dt.datetime | None = None) -> bool:
        now = now or utcnow()
        store = cast("StoreOps", self)
        task = await store.get_task(lease.task_id)
        limit = None if task.queue is None else self._limit(QUEUE_PREFIX + task.queue)
        if limit is None or limit.concurrency is None:
            return True
        running = 0
        for text in self.tasks.values():
            other = Task.from_json(text)
            if (other.queue, other.partition) != (task.queue, task.partition):
                continue
            held = await store.get_lease(other.id)
            if held is not None and held.is_live(now):
                running += 1
        if running <= limit.concurrency:
            return True
        await store.release_lease(lease, now=now)
        return False

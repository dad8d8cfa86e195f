"""The limits (`LimitOps`) written once for every SQL database, as part of `SqlOps`.

Each key is a row of ``limits``, read ``FOR UPDATE`` (PostgreSQL; SQLite's
``BEGIN IMMEDIATE`` holds the whole file) by the transaction that takes a
turn under it, so the workers of every host take turns one at a time. The
pacing arithmetic is `LimitOps`'s own (`next_turn`, `paced`); a time the
row has not set yet is 0. A slot is a row of ``limit_slots`` naming its
task's lease by token: it counts while that lease is live.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from ...records import Lease, Limit, utcnow
from ..ops.limits import TURN_KEPT, LimitOps, Turn, next_turn, paced
from . import rows
from .driver import Driver

__all__ = ["SqlLimits"]

# Claims judged under a queue's concurrency take this lock first, so two claims are judged one
# after the other (the later one counts the earlier one's leases): see queue_turn.
QUEUE_LOCK = "ratchet:queue-turns"


def _time(micros: int) -> dt.datetime | None:
    return None if not micros else rows.from_micros(micros)


def _micros(value: dt.datetime | None) -> int:
    return 0 if value is None else rows.to_micros(value)


def _limit_from_row(row: Sequence[Any]) -> Limit:
    key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until = row
    return Limit(
        key=key,
        rpm=rpm,
        tpm=tpm,
        concurrency=concurrency,
        next_request_at=_time(next_request_at),
        next_token_at=_time(next_token_at),
        blocked_until=_time(blocked_until),
    )


def _limit_params(limit: Limit) -> dict[str, Any]:
    return {
        "key": limit.key,
        "rpm": limit.rpm,
        "tpm": limit.tpm,
        "concurrency": limit.concurrency,
        "next_request_at": _micros(limit.next_request_at),
        "next_token_at": _micros(limit.next_token_at),
        "blocked_until": _micros(limit.blocked_until),
    }


class SqlLimits(LimitOps):
    """`LimitOps` over a driver; `SqlOps` supplies the driver."""

    _d: Driver

    async def set_limit(self, limit: Limit) -> Limit:
        row = await self._d.one("set_limit", _limit_params(limit))
        assert row is not None
        return _limit_from_row(row)

    async def delete_limit(self, key: str) -> bool:
        await self._d.execute("delete_limit_slots", {"key": key})
        return await self._d.execute("delete_limit", {"key": key}) > 0

    async def list_limits(self, keys: Sequence[str] | None = None) -> list[Limit]:
        if keys is None:
            return [_limit_from_row(row) for row in await self._d.all("list_limits")]
        found = await self._d.all("limits_of", {"keys": json.dumps(sorted(set(keys)))})
        return [_limit_from_row(row) for row in found]

    async def _locked(self, keys: Sequence[str]) -> list[Limit]:
        found = await self._d.all("lock_limits", {"keys": json.dumps(sorted(set(keys)))})
        return [_limit_from_row(row) for row in found]

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
        limits = await self._locked(keys)
        await self._d.execute("drop_limit_turns", {"before": rows.to_micros(now - TURN_KEPT)})
        row = await self._d.one("get_limit_turn", {"holder": holder})
        if row is not None:
            kept = rows.from_micros(row[0])
            if next_turn(limits, kept, blocked_only=True).at <= kept:  # no block ends after it
                if kept <= now + dt.timedelta(seconds=keep_after):  # waited for in place now
                    await self._d.execute("delete_limit_turn", {"holder": holder})
                return Turn(kept, None)
            await self._d.execute("delete_limit_turn", {"holder": holder})  # a block began since
        turn = next_turn(limits, now)
        changed = [paced(limit, turn.at, tokens) for limit in limits]
        await self._d.execute_many("pace_limit", [_limit_params(limit) for limit in changed])
        if turn.at > now + dt.timedelta(seconds=keep_after):
            await self._d.execute("put_limit_turn", {"holder": holder, "at": rows.to_micros(turn.at)})
        return turn

    async def settle_tokens(self, keys: Sequence[str], tokens: int) -> None:
        changed = []
        for limit in await self._locked(keys):
            if limit.tpm and limit.next_token_at is not None and tokens:
                moved = limit.next_token_at + dt.timedelta(seconds=60 * tokens / limit.tpm)
                changed.append(_limit_params(limit.model_copy(update={"next_token_at": moved})))
        await self._d.execute_many("pace_limit", changed)

    async def block_limit(self, key: str, until: dt.datetime) -> None:
        await self._d.execute("block_limit", {"key": key, "until": rows.to_micros(until)})

    async def take_slot(
        self, keys: Sequence[str], holder: str, lease: Lease, *, now: dt.datetime | None = None
    ) -> str | None:
        now = now or utcnow()
        limited = [limit for limit in await self._locked(keys) if limit.concurrency]
        for limit in limited:
            await self._d.execute("drop_dead_limit_slots", {"key": limit.key, "now": rows.to_micros(now)})
            row = await self._d.one("count_limit_slots", {"key": limit.key, "now": rows.to_micros(now)})
            assert row is not None and limit.concurrency is not None
            if int(row[0]) >= limit.concurrency:
                return limit.key
        slot = {"holder": holder, "task_id": lease.task_id, "token": lease.token}
        await self._d.execute_many("put_limit_slot", [{**slot, "key": limit.key} for limit in limited])
        return None

    async def release_slots(self, holder: str) -> None:
        await self._d.execute("release_limit_slots", {"holder": holder})

    async def queue_turn(self, lease: Lease, *, now: dt.datetime | None = None) -> bool:
        await self._d.lock(QUEUE_LOCK)
        params = {**rows.lease_params(lease), "now": rows.to_micros(now or utcnow())}
        if await self._d.execute("queue_give_back", params) == 0:
            return True
        await self._d.execute("release_lease_claim", params)
        return False

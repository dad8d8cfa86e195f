"""`LimitOps`: the limits every worker honours, and the turns, slots and queue places they hand out.

Part of `StoreOps` (store.py); the memory store (store/memory/limits.py) and
every SQL store (store/sql/limits.py) implement them with the behaviour
written here, and share the arithmetic (`next_turn`, `paced`). Each key is
one row, changed in a short transaction that holds it, so workers on many
hosts take their turns one at a time (docs/rate-limits.md):

- **rpm and tpm** are paced as GCRA does, a token bucket of burst 1: the
  row keeps when the key's next request (and next token) may go, each
  request moves it on by ``60 / rpm`` seconds (a token by ``60 / tpm``).
  Requests are spaced, never bunched at the start of a minute, so no 60
  seconds ever hold more than the limit (unlike fixed minute windows).
- **A Retry-After** a provider answered with blocks the key until it ends,
  for every worker (`block_limit`).
- **Concurrency** on a model or endpoint counts calls in flight (slots);
  on ``queue:NAME`` it counts the queue's tasks holding a live lease. A
  slot lives as long as the lease of the task that took it, so a worker
  that dies gives its slots back when its leases expire.
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple

from ...records import Lease, Limit

__all__ = ["SPACING", "TURN_KEPT", "LimitOps", "Turn", "next_turn", "paced"]

# Requests go 1 % further apart than 60 / rpm: a request reaches the provider a little after its
# turn, by a delay that varies; without the margin two of them could arrive closer than their
# turns were, and a provider's minute could see one too many.
SPACING = 1.01
# A turn a call never came back for (its task was cancelled while it waited) is dropped this late.
TURN_KEPT = dt.timedelta(hours=1)


class Turn(NamedTuple):
    """When a call may go, and the key whose limit set that time (None: no limit held it back)."""

    at: dt.datetime
    key: str | None


def _later(a: dt.datetime | None, b: dt.datetime) -> dt.datetime:
    return b if a is None or a < b else a


def next_turn(limits: Sequence[Limit], now: dt.datetime, *, blocked_only: bool = False) -> Turn:
    """The earliest time a call held to `limits` may go: after every block, and every key's next turn."""
    turn = Turn(now, None)
    for limit in limits:
        times = [limit.blocked_until]
        if not blocked_only:
            times.append(limit.next_request_at if limit.rpm else None)
            times.append(limit.next_token_at if limit.tpm else None)
        for at in times:
            if at is not None and at > turn.at:
                turn = Turn(at, limit.key)
    return turn


def paced(limit: Limit, at: dt.datetime, tokens: int) -> Limit:
    """`limit` once a call of `tokens` (an estimate) took the turn at `at`: its next turns moved on."""
    update: dict[str, dt.datetime] = {}
    if limit.rpm:
        update["next_request_at"] = _later(limit.next_request_at, at) + dt.timedelta(
            seconds=60 * SPACING / limit.rpm
        )
    if limit.tpm and tokens > 0:
        charged = dt.timedelta(seconds=60 * tokens / limit.tpm)
        update["next_token_at"] = _later(limit.next_token_at, at) + charged
    return limit.model_copy(update=update) if update else limit


class LimitOps(abc.ABC):
    """Setting and reading limits; taking turns and slots under them; a queue's places."""

    @abc.abstractmethod
    async def set_limit(self, limit: Limit) -> Limit:
        """Keep `limit`'s rpm, tpm and concurrency as its key's, replacing those set before.

        What the store made of the key (its next turns, a block) is kept;
        the limit returned is the key's as stored.
        """

    @abc.abstractmethod
    async def delete_limit(self, key: str) -> bool:
        """Forget the key's limits and its state; False if it had none."""

    @abc.abstractmethod
    async def list_limits(self, keys: Sequence[str] | None = None) -> list[Limit]:
        """Return the limits of `keys` (None: of every key), by key; a key with no row is left out."""

    @abc.abstractmethod
    async def take_turn(
        self,
        keys: Sequence[str],
        holder: str,
        *,
        tokens: int = 0,
        keep_after: float = 0.0,
        now: dt.datetime | None = None,
    ) -> Turn:
        """Take a call's turn under the rpm and tpm limits of `keys` (and their blocks); say when it is.

        The turn is the earliest time every key allows (`next_turn`); each
        key's next turns move on from it (`paced`, charging `tokens`, an
        estimate). A turn more than `keep_after` seconds after `now` is kept
        for `holder` (a call's attempt, ``task:seq:attempt``; one waited for
        in place needs no keeping): when the holder asks again it gets that
        turn rather than a second one, and it is used up once it is no more
        than `keep_after` seconds away. A block that began since is waited out with a new turn.
        Turns kept longer than `TURN_KEPT` past their time are dropped.
        """

    @abc.abstractmethod
    async def settle_tokens(self, keys: Sequence[str], tokens: int) -> None:
        """Charge `tokens` more (fewer, when negative) to the tpm pacing of `keys`: an estimate settled."""

    @abc.abstractmethod
    async def block_limit(self, key: str, until: dt.datetime) -> None:
        """Hold every call of `key` until `until` (a provider's Retry-After), or longer if held so already.

        A key with no row gets one, with no limit set.
        """

    @abc.abstractmethod
    async def take_slot(
        self, keys: Sequence[str], holder: str, lease: Lease, *, now: dt.datetime | None = None
    ) -> str | None:
        """Take a slot for `holder` under the concurrency of each of `keys` that has one, or none at all.

        A slot counts while `lease` (its task's, that token) is live; the
        slots of an expired or released lease count no more. Returns None
        when they are taken (or no key has a concurrency), or the first key
        that is full (nothing is taken then).
        """

    @abc.abstractmethod
    async def release_slots(self, holder: str) -> None:
        """Give back every slot `holder` took."""

    @abc.abstractmethod
    async def queue_turn(self, lease: Lease, *, now: dt.datetime | None = None) -> bool:
        """Whether the task of `lease` may run under its queue's concurrency; if not, `lease` is released.

        The task may run when it is in no queue, its queue has no
        concurrency, or the tasks of its queue (of its partition, when it
        has one) that hold a live lease, its own included, are no more than
        the concurrency. Two claims judged at once are judged one after the
        other, so together they never exceed it.
        """

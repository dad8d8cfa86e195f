"""`LimitMiddleware`: each attempt of a live model call takes its turn under the limits every worker shares.

A call to ``gpu:qwen`` is held to the limits kept for ``gpu:qwen`` and for
``gpu`` (its endpoint, or its provider: `limit_keys_of`), in the store, so
the workers of every host take turns as one (store/ops/limits.py;
docs/rate-limits.md). Before the attempt it takes its turn under their
rpm and tpm and a slot under their concurrency; a wait of up to
`INLINE_LIMIT_WAIT` seconds is slept in place, a longer one parks the task
``waiting(limit)`` with a wake-up trigger at its turn, and the task, woken,
makes the call then. A provider's 429 with ``Retry-After`` blocks the key
for every worker; the attempt still fails, and is retried, as its policy says.

It is the chain's innermost layer, around each attempt rather than around
the call: every attempt is a request the provider counts, a retry
included. A wait records nothing: a model call writes no intent before
it runs, the journal and retry layers let `TaskSuspended` through, so a
call that waits burns no attempt and leaves no trace in the journal (its
``waiting`` event says which limit held it, and until when).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import Awaitable, Callable
from typing import NoReturn

from pydantic import JsonValue

from ...errors import LeaseLost, StoreError
from ...records import OpKind, Trigger, WaitReason, utcnow
from ...records.limit import limit_keys_of
from ...store.ops.limits import SPACING
from .call import Call

__all__ = [
    "INLINE_LIMIT_WAIT",
    "LATE_LIMIT",
    "SLOT_RECHECK",
    "WAKE_LEAD",
    "LimitMiddleware",
    "estimated_tokens",
]

# A turn due within this many seconds is waited for in place; a later one frees the worker.
# Short: a worker that sleeps holds one of its slots and its lease, and a woken task replays.
INLINE_LIMIT_WAIT = 5.0
# A call that finds a concurrency limit full looks again this often while it waits in place
# (up to INLINE_LIMIT_WAIT), and, parked, is woken to look again this much later.
SLOT_POLL = 0.2
# Seconds a call may go after its turn; later, it takes a new turn. Calls are spaced 1 % wider
# than 60 / rpm, 0.6 s over a provider's minute: calls late by less than half of that can never
# bring one too many into a minute.
LATE_LIMIT = (SPACING - 1) * 60 / 2
# A task parked for its turn is woken this long before it, and waits the rest in place.
WAKE_LEAD = dt.timedelta(seconds=2)
SLOT_RECHECK = 5.0
_CHARS_PER_TOKEN = 4
Proceed = Callable[[Call], Awaitable[JsonValue]]
_TOO_MANY_REQUESTS = 429


def estimated_tokens(call: Call) -> int:
    """The tokens a call is charged before it runs: its request's characters / 4, and its answer's most."""
    request = call.request
    if request is None:
        return 0
    chars = len(json.dumps([request.messages, request.tools], ensure_ascii=False, default=str))
    most = request.settings.max_output_tokens if request.settings is not None else None
    return chars // _CHARS_PER_TOKEN + (most or 0)


class LimitMiddleware:
    """Takes each live model attempt's turn and slot under its keys' limits; shares a 429's Retry-After."""

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        model = call.model or call.context.task.model
        if call.kind is not OpKind.MODEL or not model:
            return await proceed(call)
        keys = limit_keys_of(model)
        store = call.context.store
        limits = await store.list_limits(keys)  # a read: a key nobody limited costs no write
        holder = f"{call.task_id}:{call.seq}:{call.attempt}"
        tokens = estimated_tokens(call) if any(limit.tpm for limit in limits) else 0
        now = utcnow()
        if any(limit.rpm or limit.tpm or (limit.blocked_until or now) > now for limit in limits):
            await self._take_turn(call, keys, holder, tokens)
        slotted = any(limit.concurrency for limit in limits)
        if slotted:
            await self._take_slot(call, keys, holder)
        try:
            output = await proceed(call)
        except Exception as error:
            await _share_retry_after(call, model, error)
            raise
        finally:
            if slotted:
                with contextlib.suppress(LeaseLost, StoreError):  # a slot left behind ends with its lease
                    await asyncio.shield(store.release_slots(holder))
        if tokens:
            await store.settle_tokens(keys, _used_tokens(call) - tokens)
        return output

    async def _take_turn(self, call: Call, keys: tuple[str, ...], holder: str, tokens: int) -> None:
        store = call.context.store
        while True:
            # A turn kept for it (it parked, and was woken) is given back to it; a turn soon enough
            # to wait for in place is not kept: the call goes when it comes, no second transaction.
            turn = await store.take_turn(keys, holder, tokens=tokens, keep_after=INLINE_LIMIT_WAIT)
            wait = (turn.at - utcnow()).total_seconds()
            if wait > INLINE_LIMIT_WAIT:
                # Woken a little before its turn, it waits the rest in place: a task woken late (a
                # worker busy, a journal to replay) would bunch with the calls after it.
                await _park(call, turn.key or keys[0], turn.at, "its turn", wake=turn.at - WAKE_LEAD)
            if wait > 0:
                await asyncio.sleep(wait)
            # Gone much later than its turn (its worker's loop was busy), a call would come closer
            # to the calls after it than their spacing allows: it takes a new turn instead.
            if (utcnow() - turn.at).total_seconds() <= LATE_LIMIT:
                return
            tokens = 0  # charged with the first turn already

    async def _take_slot(self, call: Call, keys: tuple[str, ...], holder: str) -> None:
        context = call.context
        waited = 0.0
        while (full := await context.store.take_slot(keys, holder, context.lease)) is not None:
            if waited >= INLINE_LIMIT_WAIT:
                until = utcnow() + dt.timedelta(seconds=SLOT_RECHECK)
                await _park(call, full, until, "a free slot")
            await asyncio.sleep(SLOT_POLL)
            waited += SLOT_POLL


async def _park(
    call: Call, key: str, until: dt.datetime, what: str, *, wake: dt.datetime | None = None
) -> NoReturn:
    """Commit that the task waits on `key`'s limit until `until` (woken then, or at `wake`), and unwind."""
    context = call.context
    context.stop_here_if_stopping(call)
    await context.suspend(
        WaitReason.LIMIT,
        f"{call.name} (operation {call.seq}) waits for {what} under the limit of {key} "
        f"until {until:%H:%M:%S} UTC",
        data={"seq": call.seq, "limit": key, "until": until.isoformat()},
        trigger=Trigger(
            kind="wake",
            task_id=call.task_id,
            fire_at=wake or until,
            dedupe_key=f"{call.task_id}:limit:{call.seq}:{call.attempt}",
        ),
    )


def _used_tokens(call: Call) -> int:
    usage = call.meta.get("usage")
    if not isinstance(usage, dict):
        return 0
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (prompt if isinstance(prompt, int) else 0) + (completion if isinstance(completion, int) else 0)


async def _share_retry_after(call: Call, model: str, error: Exception) -> None:
    """A 429 with Retry-After blocks `model` for every worker until it ends; the attempt fails as it would."""
    retry_after = getattr(error, "retry_after", None)
    if getattr(error, "status", None) != _TOO_MANY_REQUESTS or not isinstance(retry_after, int | float):
        return
    until = utcnow() + dt.timedelta(seconds=float(retry_after))
    with contextlib.suppress(StoreError):  # the attempt's own failure is what the caller must see
        await call.context.store.block_limit(model, until)

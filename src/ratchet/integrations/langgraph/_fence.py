"""`ThreadFence`: a saver's leases on the threads it writes (``RatchetSaver(..., fence=True)``).

Two processes that run the same thread both succeed with LangGraph's savers,
and the thread's checkpoints fork. A fenced saver takes a lease on a thread
before its first write there (the store's lease operations, under the key
``langgraph:<thread id>``, the id of the thread's task), renews it as it
writes, and sends every write with it: the store refuses a write whose lease is no longer current
(`LeaseLost`). A saver that finds another's lease live is refused with a
`ConflictError` before writing anything; a lease whose holder is gone expires
after its time to live, and the thread can then be taken.

A saver that keeps its threads as tasks (``tasks=True``, the default) holds
the same lease while a thread runs, fenced or not (`hold`): it is the task's
lease, so a `ratchet worker` does not take up a thread a live program is
running; it lets go when the thread waits or ends (`let_go`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
import uuid

from ...errors import ConflictError, LeaseLost
from ...records import Lease, utcnow
from ...records.langgraph_thread import thread_task_id
from ...store import StateStore

__all__ = ["ThreadFence"]


def lease_key(thread_id: str) -> str:
    """The key of a thread's lease among the store's leases: its task's id."""
    return thread_task_id(thread_id)


class ThreadFence:
    """The leases one saver holds, by thread."""

    def __init__(self, store: StateStore, ttl: float) -> None:
        if ttl <= 0:
            raise ValueError(f"fence_ttl must be a number of seconds above 0, not {ttl}")
        self.store = store
        self.ttl = ttl
        self.owner = f"langgraph-saver-{uuid.uuid4().hex[:12]}"
        self._leases: dict[str, Lease] = {}
        self._claiming = asyncio.Lock()

    async def lease(self, thread_id: str) -> Lease:
        """The saver's current lease on the thread: claimed on first use, renewed past half its life.

        Raises:
            ConflictError: another writer holds a live lease on the thread.
            LeaseLost: this saver's lease expired and another writer took the thread.
        """
        async with self._claiming:
            lease = self._leases.get(thread_id)
            if lease is None:
                lease = await self._claim(thread_id)
            elif lease.expires_at - utcnow() < dt.timedelta(seconds=self.ttl / 2):
                lease = await self.store.renew_lease(lease, self.ttl)
            self._leases[thread_id] = lease
            return lease

    async def hold(self, thread_id: str) -> Lease | None:
        """`lease`, or None where another holds the thread (a saver that is not fenced writes anyway)."""
        try:
            return await self.lease(thread_id)
        except LeaseLost:  # another took it while this saver was quiet: claimed again next time
            self._leases.pop(thread_id, None)
            return None
        except ConflictError:
            return None

    async def let_go(self, thread_id: str) -> None:
        """Release the saver's lease on one thread, if it holds one."""
        async with self._claiming:
            lease = self._leases.pop(thread_id, None)
            if lease is not None:
                await self._release(lease)

    async def _claim(self, thread_id: str) -> Lease:
        key = lease_key(thread_id)
        claimed = await self.store.claim_lease(
            key, self.owner, self.ttl, host=socket.gethostname(), pid=os.getpid()
        )
        if claimed is not None:
            return claimed
        holder = await self.store.get_lease(key)
        who = (
            "another writer"
            if holder is None
            else f"{holder.owner} (pid {holder.pid} on {holder.host or '?'})"
        )
        until = "" if holder is None else f", whose lease ends at {holder.expires_at:%H:%M:%S} UTC"
        raise ConflictError(
            f"thread {thread_id!r} is being written by {who}{until}; "
            "this saver has fence=True and does not fork the thread's checkpoints"
        )

    async def release(self) -> None:
        """Release every lease the saver holds (a lease already lost is left as it is)."""
        held, self._leases = self._leases, {}
        for lease in held.values():
            await self._release(lease)

    async def _release(self, lease: Lease) -> None:
        current = await self.store.get_lease(lease.task_id)
        if current is not None and current.token == lease.token and not current.released:
            await self.store.release_lease(lease)

"""Leases for the fence tests: a leased task, a lease another worker can replace, a settled call.

The fence suites of both SQL stores (tests/store/test_*_fence.py) and group
commit's start from the same few states; they are built here once.
"""

from __future__ import annotations

import datetime as dt

from ratchet.records import Lease, Operation, OpStatus, Task, utcnow
from ratchet.store import StateStore

from .builders import make_op, make_task

__all__ = ["lapsed_lease", "leased_task", "settled_call"]


async def leased_task(store: StateStore, task_id: str = "t1", owner: str = "w1") -> tuple[Task, Lease]:
    """A new task and `owner`'s current lease on it (30 s)."""
    task = await store.create_task(make_task(task_id))
    lease = await store.claim_lease(task.id, owner, 30)
    assert lease is not None
    return task, lease


async def lapsed_lease(store: StateStore, task_id: str = "t1") -> tuple[Task, Lease]:
    """A new task and worker "late"'s lease on it, expired: the next claim (`claim_tasks`) replaces it."""
    task = await store.create_task(make_task(task_id))
    lease = await store.claim_lease(task.id, "late", 1, now=utcnow() - dt.timedelta(seconds=10))
    assert lease is not None
    return task, lease


async def settled_call(store: StateStore, lease: Lease) -> Operation:
    """Operation 0 of the lease's task, succeeded (output ``{"ok": True}``), written under `lease`."""
    op = make_op(lease.task_id, 0, OpStatus.SUCCEEDED, output={"ok": True})
    await store.record_op_finished(op, fence=lease)
    return op

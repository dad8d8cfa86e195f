"""Group commit and lease renewals: on a pooled store (PostgreSQL) a renewal commits apart from any group.

Why: a renewal holds its lease row exclusively until it commits, and in a
group that is the group's commit. Two groups, each renewing a lease whose
task's journal write waits in the other (its fence takes the row ``FOR
SHARE`` with that group's commit), would wait on each other until
PostgreSQL failed one of them, every member with it; the heartbeats of tasks
started together renew together. On one connection (SQLite) groups commit
one after another, so there a renewal shares a commit like any write.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ratchet.records import OpStatus
from ratchet.store import StateStore

from ..helpers.builders import make_op
from ..helpers.fences import leased_task
from ..helpers.stores import opened, sharing_commits


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[StateStore]:
    """The suite's store with group commit on (by default only SQLite with durability=full has it)."""
    async with opened(sharing_commits(store_url)) as store:
        yield store


async def test_a_renewal_shares_no_commit_on_a_pool_and_keeps_the_lease(store: StateStore) -> None:
    task, lease = await leased_task(store, "t0")
    groups = store.groups
    before = (groups.commits, groups.members) if groups is not None else (0, 0)

    renewed = await store.renew_lease(lease, 60)

    assert (renewed.token, renewed.owner) == (lease.token, lease.owner)
    assert renewed.expires_at > lease.expires_at
    if groups is not None:  # one group of one on SQLite; none at all on a pool
        shared = 1 if store.exclusive else 0
        assert (groups.commits, groups.members) == (before[0] + shared, before[1] + shared)
    async with store.transaction(fence=renewed) as tx:  # the renewed lease still fences
        await tx.record_op_started(make_op(task.id, 0))
    op = await store.get_op(task.id, 0)
    assert op is not None and op.status is OpStatus.STARTED

"""The PostgreSQL fence, sent with a transaction's first statement in one pipeline.

`ratchet_check_fence` raises SQLSTATE RLOST when the writer's lease is not
current; the driver turns that into `LeaseLost`, and nothing the transaction
did is kept. The connection goes back to the pool clean: the next
transaction on it commits.
"""

from __future__ import annotations

import psycopg
import pytest

from ratchet.errors import DuplicateRecord, LeaseLost
from ratchet.records import OpStatus, TaskStatus
from ratchet.store import open_store

from ..helpers.builders import make_event, make_op, make_task
from ..helpers.fences import lapsed_lease, leased_task, settled_call


async def test_a_lease_replaced_before_the_first_write_raises_lease_lost_and_keeps_nothing(
    postgres_url: str,
) -> None:
    async with (
        await open_store(f"{postgres_url}?pool_size=1") as store,
        await open_store(postgres_url) as other,
    ):
        task, lapsed = await lapsed_lease(store)
        with pytest.raises(LeaseLost, match=r"^lease 1 of late on task t1 is no longer current$"):
            async with store.transaction(fence=lapsed) as tx:
                # Another worker takes the task over after the block began, before its first write.
                [taken] = await other.claim_tasks("w2", 30)
                await tx.record_op_started(make_op(task.id, 0))
                await tx.append_event(make_event(task.id, "never"))
        assert await store.get_op(task.id, 0) is None
        assert await store.list_events(task.id) == []
        # The pool's one connection was left outside any transaction: the new holder's writes commit on it.
        async with store.transaction(fence=taken) as tx:
            await tx.record_op_started(make_op(task.id, 0))
        op = await store.get_op(task.id, 0)
        assert op is not None and op.status is OpStatus.STARTED


async def test_a_stale_fence_on_a_transaction_that_wrote_nothing_still_raises(postgres_url: str) -> None:
    async with await open_store(f"{postgres_url}?pool_size=1") as store:
        task, lease = await leased_task(store)
        await store.release_lease(lease)
        with pytest.raises(LeaseLost, match="no longer current"):
            async with store.transaction(fence=lease):
                pass
        running = await store.update_task(task.transition(TaskStatus.RUNNING))
        assert (await store.get_task(task.id)) == running


async def test_the_fence_function_raises_its_own_sqlstate(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        await store.create_task(make_task("t1"))
    with psycopg.connect(postgres_url, autocommit=True) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("SELECT ratchet_check_fence('t1', 1)")
    assert raised.value.sqlstate == "RLOST"
    assert "lease 1 on task t1 is no longer current" in str(raised.value)


async def test_a_journal_write_sent_with_the_commit_that_changes_nothing_raises_and_keeps_nothing(
    postgres_url: str,
) -> None:
    async with await open_store(postgres_url) as store:
        task, lease = await leased_task(store)
        await settled_call(store, lease)
        with pytest.raises(DuplicateRecord, match=r"^operation 0 of task t1 already succeeded$"):
            async with store.transaction(fence=lease) as tx:
                await tx.record_op_started(make_op(task.id, 0))
                await tx.update_task(task.transition(TaskStatus.RUNNING))
        with pytest.raises(DuplicateRecord, match=r"^operation 0 of task t1 already succeeded$"):
            await store.record_op_finished(make_op(task.id, 0, OpStatus.FAILED, error="late"), fence=lease)
        assert (await store.get_task(task.id)).status is TaskStatus.QUEUED
        op = await store.get_op(task.id, 0)
        assert op is not None and (op.status, op.output) == (OpStatus.SUCCEEDED, {"ok": True})

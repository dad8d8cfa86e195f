"""The SQLite fence, folded into the journal's write.

A fenced transaction's lease check waits for its first statement: a journal
write carries it (``INSERT ... SELECT ... WHERE`` the lease is current), any
other statement or the commit runs it first. Either way the check and the
write share one transaction: a stale lease raises `LeaseLost` and nothing of
the transaction is kept; a refused write with a current lease raises its own
error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.errors import DuplicateRecord, LeaseLost
from ratchet.records import OpStatus, TaskStatus
from ratchet.store import open_store

from ..helpers.builders import make_event, make_op
from ..helpers.fences import lapsed_lease, leased_task, settled_call


async def test_a_journal_write_under_a_replaced_lease_raises_lease_lost_and_keeps_nothing(
    tmp_path: Path,
) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'fence.db'}") as store:
        task, lapsed = await lapsed_lease(store)
        [taken] = await store.claim_tasks("w2", 30)
        for write in ("record_op_started", "record_op_finished"):
            refused = (
                make_op(task.id, 0)
                if write == "record_op_started"
                else make_op(task.id, 0, OpStatus.SUCCEEDED)
            )
            with pytest.raises(LeaseLost, match=r"^lease 1 of late on task t1 is no longer current$"):
                async with store.transaction(fence=lapsed) as tx:
                    await getattr(tx, write)(refused)
                    await tx.append_event(make_event(task.id, "never"))
        assert await store.get_op(task.id, 0) is None
        assert await store.list_events(task.id) == []
        # The holder's writes go through on the same connection.
        async with store.transaction(fence=taken) as tx:
            await tx.record_op_started(make_op(task.id, 0))
        op = await store.get_op(task.id, 0)
        assert op is not None and op.status is OpStatus.STARTED


async def test_the_fence_runs_before_any_other_statement_and_at_commit(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'fence.db'}") as store:
        task, lease = await leased_task(store)
        await store.release_lease(lease)
        with pytest.raises(LeaseLost, match="no longer current"):
            async with store.transaction(fence=lease) as tx:
                await tx.update_task(task.transition(TaskStatus.RUNNING))
        with pytest.raises(LeaseLost, match="no longer current"):
            async with store.transaction(fence=lease):
                pass
        assert (await store.get_task(task.id)).status is TaskStatus.QUEUED


async def test_a_refused_write_under_a_current_lease_raises_its_own_error(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'fence.db'}") as store:
        task, lease = await leased_task(store)
        await settled_call(store, lease)
        with pytest.raises(DuplicateRecord, match=r"^operation 0 of task t1 already succeeded$"):
            async with store.transaction(fence=lease) as tx:
                await tx.record_op_started(make_op(task.id, 0))
        op = await store.get_op(task.id, 0)
        assert op is not None and (op.status, op.output) == (OpStatus.SUCCEEDED, {"ok": True})
        # The fence is taken by the statement that carried it: the next write checks its own.
        async with store.transaction(fence=lease) as tx:
            await tx.record_op_started(make_op(task.id, 1))
            await tx.record_op_finished(make_op(task.id, 1, OpStatus.SUCCEEDED, output=2))
        op = await store.get_op(task.id, 1)
        assert op is not None and op.output == 2

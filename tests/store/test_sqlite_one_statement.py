"""The SQLite journal write as one statement: no ``BEGIN`` or ``COMMIT``, every guarantee kept.

A transaction of one journal write (`StateStore.record_op_started` and
`record_op_finished`, what the engine's journal calls when nothing rides with
the write) runs as that statement alone, its lease check folded in. A stale
fence writes nothing and raises `LeaseLost`; a refused write raises its own
error; another process's write lock is waited for in slices, the event loop
running meanwhile; a transaction that needs more than the write begins one
after all.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from ratchet.errors import DuplicateRecord, LeaseLost
from ratchet.records import OpStatus
from ratchet.store import StateStore, open_store
from ratchet.store.sql.sqlite.store import SqliteDriver, SqliteStore

from ..helpers.builders import make_op
from ..helpers.fences import lapsed_lease, leased_task, settled_call


def traced(store: StateStore) -> list[str]:
    """Every statement the store's connection runs from now on, its first word (comments left out)."""
    assert isinstance(store, SqliteStore) and store._open is not None
    driver = store._open.driver
    assert isinstance(driver, SqliteDriver)
    statements: list[str] = []

    def note(sql: str) -> None:
        words = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
        statements.append(" ".join(words).split()[0].upper())

    driver.conn.set_trace_callback(note)
    return statements


async def test_a_journal_write_is_one_statement_without_begin_or_commit(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'one.db'}") as store:
        task, lease = await leased_task(store)
        statements = traced(store)
        await store.record_op_started(make_op(task.id, 0), fence=lease)
        await store.record_op_finished(make_op(task.id, 0, OpStatus.SUCCEEDED, output=1), fence=lease)
        assert statements == ["INSERT", "INSERT"]
        op = await store.get_op(task.id, 0)
        assert op is not None and (op.status, op.output) == (OpStatus.SUCCEEDED, 1)


@pytest.mark.parametrize("write", ["record_op_started", "record_op_finished"])
async def test_a_journal_write_under_a_stale_fence_writes_nothing_and_raises_lease_lost(
    tmp_path: Path, write: str
) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'one.db'}") as store:
        task, lapsed = await lapsed_lease(store)
        [taken] = await store.claim_tasks("w2", 30)
        op = make_op(task.id, 0) if write == "record_op_started" else make_op(task.id, 0, OpStatus.SUCCEEDED)
        statements = traced(store)
        with pytest.raises(LeaseLost, match=r"^lease 1 of late on task t1 is no longer current$"):
            await getattr(store, write)(op, fence=lapsed)
        assert "BEGIN" not in statements
        assert await store.get_op(task.id, 0) is None
        # The connection is left as it was: the holder's write goes through, alone again.
        await getattr(store, write)(op, fence=taken)
        stored = await store.get_op(task.id, 0)
        assert stored is not None and stored.status is op.status


async def test_a_refused_journal_write_under_a_current_fence_raises_its_own_error(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'one.db'}") as store:
        task, lease = await leased_task(store)
        await settled_call(store, lease)
        with pytest.raises(DuplicateRecord, match=r"^operation 0 of task t1 already succeeded$"):
            await store.record_op_started(make_op(task.id, 0), fence=lease)
        op = await store.get_op(task.id, 0)
        assert op is not None and (op.status, op.output) == (OpStatus.SUCCEEDED, {"ok": True})


async def test_a_journal_write_with_large_parts_begins_a_transaction_for_them(tmp_path: Path) -> None:
    async with await open_store(f"sqlite:///{tmp_path / 'one.db'}") as store:
        task, lease = await leased_task(store)
        big = make_op(task.id, 0, input={"document": "x" * 20_000})
        statements = traced(store)
        await store.record_op_started(big, fence=lease)
        assert statements[0] == "BEGIN" and statements[-1] == "COMMIT"
        op = await store.get_op(task.id, 0)
        assert op is not None and op.input == {"document": "x" * 20_000}


async def test_a_journal_write_waits_for_another_process_write_lock_with_the_loop_running(
    tmp_path: Path,
) -> None:
    path = tmp_path / "one.db"
    async with await open_store(f"sqlite:///{path}") as store:
        task, lease = await leased_task(store)
        locked, release = threading.Event(), threading.Event()

        def hold_the_write_lock() -> None:  # another connection, as another process's would be
            other = sqlite3.connect(path, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                locked.set()
                release.wait()
                other.execute("COMMIT")
            finally:
                other.close()

        holder = threading.Thread(target=hold_the_write_lock)
        holder.start()
        try:
            await asyncio.to_thread(locked.wait)
            ticks = 0
            write = asyncio.create_task(store.record_op_started(make_op(task.id, 0), fence=lease))
            while ticks < 5:  # a heartbeat's turn comes while the write waits for the lock
                await asyncio.sleep(0.01)
                ticks += 1
                assert not write.done()
            reader = sqlite3.connect(path)
            try:
                assert reader.execute("SELECT COUNT(*) FROM operations").fetchone() == (0,)
            finally:
                reader.close()
        finally:
            release.set()
            await asyncio.to_thread(holder.join)
        await write
        op = await store.get_op(task.id, 0)
        assert op is not None and op.status is OpStatus.STARTED

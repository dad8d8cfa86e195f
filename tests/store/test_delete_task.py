"""`delete_task`: an ended task and every row of it go; nothing else does."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from ratchet.errors import CannotDelete, TaskNotFound
from ratchet.records import Approval, Event, InboxMessage, Task, TaskGrant, TaskStatus
from ratchet.store import StateStore

from ..helpers.builders import finish, make_artifact, make_checkpoint, make_message, make_task, make_trigger
from .test_content import history, model_op

DOOMED = "doomed-7f3a"


async def fill(store: StateStore, task_id: str, **changes: object) -> Task:
    """A task with a row in every table a task has rows in; its lease released."""
    task = await store.create_task(make_task(task_id, **changes))
    for seq in range(3):
        started = await store.record_op_started(model_op(task_id, seq, history(seq + 1)))
        await store.record_op_finished(finish(started))
    await store.replace_steps(task_id, [])
    await store.append_messages([make_message(task_id, "hello"), make_message(task_id, "again")])
    await store.append_event(Event(task_id=task_id, kind="note", message="a note"))
    await store.put_artifact(make_artifact(f"{task_id}-artifact", task_id), b"some bytes")
    await store.put_trigger(make_trigger(task_id=task_id, kind="retry"))
    await store.put_checkpoint(make_checkpoint(task, last_seq=2))
    await store.request_approval(Approval(task_id=task_id, seq=9, tool="send_mail"))
    await store.send_message(InboxMessage(task_id=task_id, name="reply", payload={"ok": True}))
    await store.grant_task(TaskGrant(task_id=task_id, agent="helper"))
    lease = await store.claim_lease(task_id, "worker-1", 30.0)
    assert lease is not None
    await store.release_lease(lease)
    return task


async def cancelled(store: StateStore, task_id: str) -> Task:
    task = await store.get_task(task_id)
    return await store.update_task(task.model_copy(update={"status": TaskStatus.CANCELLED}))


async def test_deleting_an_ended_task_removes_everything_of_it_and_nothing_else(store: StateStore) -> None:
    await fill(store, DOOMED)
    kept = await fill(store, "kept-1")
    kept_ops = await store.list_ops(kept.id)
    await cancelled(store, DOOMED)
    await store.delete_task(DOOMED)
    with pytest.raises(TaskNotFound):
        await store.get_task(DOOMED)
    assert await store.list_ops(DOOMED) == []
    assert await store.list_steps(DOOMED) == []
    assert await store.list_messages(DOOMED) == []
    assert await store.list_events(DOOMED) == []
    assert await store.list_artifacts(DOOMED) == []
    assert await store.list_triggers(DOOMED) == []
    assert await store.list_checkpoints(DOOMED) == []
    assert await store.list_approvals(task_id=DOOMED) == []
    assert await store.list_inbox(DOOMED) == []
    assert await store.list_grants(DOOMED) == []
    assert await store.get_lease(DOOMED) is None
    assert await store.lease_history(DOOMED) == []
    # The other task is whole, content included.
    assert await store.list_ops(kept.id) == kept_ops
    assert len(await store.list_messages(kept.id)) == 2
    assert await store.get_lease(kept.id) is not None


def _rows_naming(url: str, task_id: str) -> dict[str, int]:
    """How many rows of each table hold `task_id` in any text column, read from the database itself."""
    found: dict[str, int] = {}
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
                found[table] = sum(any(isinstance(v, str) and task_id in v for v in row) for row in rows)
        return found
    with psycopg.connect(url) as pg:
        tables = [
            name for (name,) in pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        for table in tables:
            rows = pg.execute(f'SELECT * FROM "{table}"').fetchall()
            found[table] = sum(any(isinstance(v, str) and task_id in v for v in row) for row in rows)
    return found


def _memory_rows_naming(store: StateStore, task_id: str) -> dict[str, int]:
    """The same, over the memory store's tables (its dicts of JSON text)."""
    tables = {name: table for name, table in vars(store._ops).items() if isinstance(table, dict)}  # type: ignore[attr-defined]
    return {name: sum(task_id in repr(item) for item in table.items()) for name, table in tables.items()}


@pytest.mark.parametrize("store_kind", ["memory"], indirect=True)
async def test_no_table_of_the_memory_store_names_a_deleted_task_but_the_change_log(
    store: StateStore,
) -> None:
    await fill(store, DOOMED)
    await cancelled(store, DOOMED)
    before = _memory_rows_naming(store, DOOMED)
    assert before["ops"] and before["lease_claims"] and before["approvals"]
    await store.delete_task(DOOMED)
    after = {table: count for table, count in _memory_rows_naming(store, DOOMED).items() if count}
    assert after == {"task_changes": before["task_changes"]}


@pytest.mark.parametrize("store_kind", ["sqlite", "postgres"], indirect=True)
async def test_no_row_of_any_table_names_a_deleted_task_but_the_change_log(
    store: StateStore, store_url: str
) -> None:
    await fill(store, DOOMED)
    await fill(store, "kept-1")
    await cancelled(store, DOOMED)
    before = _rows_naming(store_url, DOOMED)
    assert before["contents"] and before["operations"] and before["lease_claims"]  # it had rows to delete
    await store.delete_task(DOOMED)
    after = {table: count for table, count in _rows_naming(store_url, DOOMED).items() if count}
    # The change log is a gapless feed read by position (store/ops/task_delete.py): it keeps its entries.
    assert after == {"task_changes": before["task_changes"]}
    assert _rows_naming(store_url, "kept-1")["contents"] > 0


@pytest.mark.parametrize("status", [TaskStatus.QUEUED, TaskStatus.RUNNING])
async def test_a_task_that_has_not_ended_is_not_deleted(store: StateStore, status: TaskStatus) -> None:
    task = await store.create_task(make_task(DOOMED))
    if status is TaskStatus.RUNNING:
        await store.update_task(task.model_copy(update={"status": status}))
    with pytest.raises(CannotDelete, match="only an ended task can be deleted"):
        await store.delete_task(DOOMED)
    assert (await store.get_task(DOOMED)).id == DOOMED


async def test_a_task_still_leased_is_not_deleted(store: StateStore) -> None:
    await store.create_task(make_task(DOOMED))
    await store.claim_lease(DOOMED, "worker-1", 30.0)
    await cancelled(store, DOOMED)
    with pytest.raises(CannotDelete, match="still leased by worker-1"):
        await store.delete_task(DOOMED)


async def test_a_parent_is_deleted_only_after_its_children(store: StateStore) -> None:
    await store.create_task(make_task(DOOMED))
    await store.create_task(make_task("child-1", parent_id=DOOMED))
    await cancelled(store, DOOMED)
    await cancelled(store, "child-1")
    with pytest.raises(CannotDelete, match="has 1 child task"):
        await store.delete_task(DOOMED)
    await store.delete_task("child-1")
    await store.delete_task(DOOMED)
    with pytest.raises(TaskNotFound):
        await store.get_task(DOOMED)


async def test_deleting_no_task_says_so(store: StateStore) -> None:
    with pytest.raises(TaskNotFound):
        await store.delete_task("nobody")

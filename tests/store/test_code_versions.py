"""A task's code version (``Task.code_version``) is kept with its record and found by it, on every
store kind: written when the task is made, changed when a worker moves it to its own version."""

from __future__ import annotations

import datetime as dt

from ratchet.records import TaskFilter, TaskStatus
from ratchet.store import StateStore

from ..helpers.builders import make_task

T0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.UTC)


async def _versioned(store: StateStore) -> None:
    for i, (task_id, version) in enumerate([("v1", "v1.0"), ("v2", "v2.0"), ("old", None), ("v1b", "v1.0")]):
        at = T0 + dt.timedelta(minutes=i)
        await store.create_task(make_task(task_id, code_version=version, created_at=at, updated_at=at))


async def test_tasks_are_found_by_the_code_version_they_started_on(store: StateStore) -> None:
    await _versioned(store)

    found = await store.list_task_rows(TaskFilter(code_version="v1.0"))

    assert [row.id for row in found] == ["v1", "v1b"]
    assert await store.count_task_rows(TaskFilter(code_version="v2.0")) == 1
    assert await store.count_task_rows(TaskFilter(code_version="v1")) == 0  # exactly, not a prefix
    assert (await store.get_task("v1")).code_version == "v1.0"
    assert (await store.get_task("old")).code_version is None  # made before versions: none


async def test_a_task_moved_to_another_version_is_found_by_its_new_one(store: StateStore) -> None:
    await _versioned(store)
    task = await store.get_task("v1")

    await store.update_task(task.transition(TaskStatus.RUNNING).model_copy(update={"code_version": "v2.0"}))

    assert [row.id for row in await store.list_task_rows(TaskFilter(code_version="v2.0"))] == ["v1", "v2"]
    assert [row.id for row in await store.list_task_rows(TaskFilter(code_version="v1.0"))] == ["v1b"]
    assert (await store.get_task("v1")).code_version == "v2.0"

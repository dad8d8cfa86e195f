"""Tasks and their steps."""

from __future__ import annotations

import pytest

from ratchet.errors import DuplicateRecord, InvalidTransition, StepNotFound, TaskNotFound
from ratchet.records import StepStatus, Task, TaskStatus, WaitReason
from ratchet.store import StateStore

from ..helpers.builders import at, make_step, make_steps, make_task


async def _advance(store: StateStore, task: Task, *path: TaskStatus) -> Task:
    """Move the stored task along `path`, one update per move."""
    for status in path:
        waiting_on = WaitReason.TIMER if status is TaskStatus.WAITING else None
        task = await store.update_task(task.transition(status, waiting_on=waiting_on))
    return task


# ------------------------------------------------------------------ tasks


async def test_create_then_get_returns_the_same_task(store: StateStore) -> None:
    task = make_task("a", goal="ship it", inputs_params={"n": 3}, deadline=at(3600))
    created = await store.create_task(task)
    assert created == task
    assert await store.get_task("a") == task


async def test_create_with_an_existing_id_raises_duplicate(store: StateStore, task: Task) -> None:
    with pytest.raises(DuplicateRecord):
        await store.create_task(make_task(task.id, name="another"))
    assert await store.get_task(task.id) == task


async def test_get_unknown_task_raises_task_not_found(store: StateStore) -> None:
    with pytest.raises(TaskNotFound) as caught:
        await store.get_task("nope")
    assert caught.value.task_id == "nope"


async def test_list_tasks_oldest_first_filtered_by_status(store: StateStore) -> None:
    for id, seconds in [("b", 2), ("c", 3), ("a", 1)]:
        await store.create_task(make_task(id, created_at=at(seconds), updated_at=at(seconds)))
    await _advance(store, await store.get_task("c"), TaskStatus.RUNNING)

    assert [t.id for t in await store.list_tasks()] == ["a", "b", "c"]
    assert [t.id for t in await store.list_tasks(TaskStatus.QUEUED)] == ["a", "b"]
    assert [t.id for t in await store.list_tasks(TaskStatus.RUNNING)] == ["c"]
    assert await store.list_tasks(TaskStatus.FAILED) == []
    assert [t.id for t in await store.list_tasks(limit=2)] == ["a", "b"]


async def test_update_task_writes_the_record(store: StateStore, task: Task) -> None:
    running = task.transition(TaskStatus.RUNNING, goal="new goal", context="ctx")
    stored = await store.update_task(running)
    assert stored.status is TaskStatus.RUNNING
    assert stored.goal == "new goal"
    assert await store.get_task(task.id) == stored


async def test_update_task_through_waiting_and_back(store: StateStore, task: Task) -> None:
    waiting = await _advance(store, task, TaskStatus.RUNNING, TaskStatus.WAITING)
    assert (await store.get_task(task.id)).waiting_on is WaitReason.TIMER
    running = await _advance(store, waiting, TaskStatus.RUNNING)
    assert await store.get_task(task.id) == running
    assert running.waiting_on is None


async def test_update_in_the_same_live_status_is_allowed(store: StateStore, task: Task) -> None:
    running = await _advance(store, task, TaskStatus.RUNNING)
    stored = await store.update_task(running.model_copy(update={"context": "more"}))
    assert (await store.get_task(task.id)).context == "more" == stored.context


async def test_update_unknown_task_raises_task_not_found(store: StateStore) -> None:
    with pytest.raises(TaskNotFound):
        await store.update_task(make_task("ghost"))


async def test_stale_writer_cannot_revive_a_completed_task(store: StateStore, task: Task) -> None:
    running = await _advance(store, task, TaskStatus.RUNNING)
    completed = await _advance(store, running, TaskStatus.COMPLETED)
    with pytest.raises(InvalidTransition):
        await store.update_task(running.model_copy(update={"context": "stale"}))
    assert await store.get_task(task.id) == completed


async def test_terminal_task_cannot_be_rewritten_in_place(store: StateStore, task: Task) -> None:
    failed = await _advance(store, task, TaskStatus.FAILED)
    with pytest.raises(InvalidTransition):
        await store.update_task(failed.model_copy(update={"error": "rewritten"}))
    assert await store.get_task(task.id) == failed


async def test_update_skipping_the_machine_is_refused(store: StateStore, task: Task) -> None:
    with pytest.raises(InvalidTransition):
        await store.update_task(task.model_copy(update={"status": TaskStatus.COMPLETED}))
    assert await store.get_task(task.id) == task


# ------------------------------------------------------------------ steps


async def test_replace_steps_then_list_in_index_order(store: StateStore, task: Task) -> None:
    steps = make_steps(task.id, 3)
    await store.replace_steps(task.id, list(reversed(steps)))
    assert await store.list_steps(task.id) == steps


async def test_replace_steps_removes_steps_not_given(store: StateStore, task: Task) -> None:
    await store.replace_steps(task.id, make_steps(task.id, 4))
    kept = [make_step(task.id, 0, status=StepStatus.COMPLETED), make_step(task.id, 1, name="new")]
    await store.replace_steps(task.id, kept)
    assert await store.list_steps(task.id) == kept


async def test_replace_steps_of_unknown_task_raises(store: StateStore) -> None:
    with pytest.raises(TaskNotFound):
        await store.replace_steps("ghost", make_steps("ghost", 1))


async def test_list_steps_of_unknown_task_is_empty(store: StateStore) -> None:
    assert await store.list_steps("ghost") == []


async def test_steps_of_tasks_are_kept_apart(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    await store.replace_steps(task.id, make_steps(task.id, 2))
    await store.replace_steps(other.id, make_steps(other.id, 1))
    assert len(await store.list_steps(task.id)) == 2
    assert await store.list_steps(other.id) == make_steps(other.id, 1)


async def test_update_step_writes_one_step(store: StateStore, task: Task) -> None:
    steps = make_steps(task.id, 2)
    await store.replace_steps(task.id, steps)
    current = await store.update_step(steps[0].transition(StepStatus.CURRENT, attempts=1))
    assert current.status is StepStatus.CURRENT
    assert await store.list_steps(task.id) == [current, steps[1]]


async def test_update_step_with_unknown_index_raises(store: StateStore, task: Task) -> None:
    await store.replace_steps(task.id, make_steps(task.id, 1))
    with pytest.raises(StepNotFound) as caught:
        await store.update_step(make_step(task.id, 5))
    assert (caught.value.task_id, caught.value.index) == (task.id, 5)
    with pytest.raises(StepNotFound):
        await store.update_step(make_step("ghost", 0))
    assert await store.list_steps(task.id) == make_steps(task.id, 1)


async def test_update_step_refuses_an_illegal_move(store: StateStore, task: Task) -> None:
    step = make_step(task.id, 0)
    await store.replace_steps(task.id, [step])
    current = await store.update_step(step.transition(StepStatus.CURRENT))
    done = await store.update_step(current.transition(StepStatus.COMPLETED))

    with pytest.raises(InvalidTransition):
        await store.update_step(current.model_copy(update={"attempts": 2}))
    with pytest.raises(InvalidTransition):
        await store.update_step(step)
    assert await store.list_steps(task.id) == [done]


async def test_update_step_in_the_same_live_status(store: StateStore, task: Task) -> None:
    step = make_step(task.id, 0)
    await store.replace_steps(task.id, [step])
    current = await store.update_step(step.transition(StepStatus.CURRENT, attempts=1))
    retried = await store.update_step(current.model_copy(update={"attempts": 2}))
    assert await store.list_steps(task.id) == [retried]
    assert retried.attempts == 2


async def test_update_step_cannot_skip_current(store: StateStore, task: Task) -> None:
    step = make_step(task.id, 0)
    await store.replace_steps(task.id, [step])
    with pytest.raises(InvalidTransition):
        await store.update_step(step.model_copy(update={"status": StepStatus.COMPLETED}))
    assert await store.list_steps(task.id) == [step]

"""Validate before resume: a task older than its checkpoint policy's max_age is set aside, not resumed."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from ratchet.engine import Worker
from ratchet.engine.run.staleness import STALE_EVENT, judge_staleness, last_progress
from ratchet.errors import CannotResume
from ratchet.policy import CheckpointPolicy
from ratchet.records import Event, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import Crash, entries
from .stale_flows import MAX_AGE, STALE_FLOWS


async def _crashed(rt: Runtime, workflow: str, ledger: str) -> str:
    """A task of `workflow` whose worker "died" in it: running, its lease let go."""
    task_id = await rt.submit(f"{STALE_FLOWS}:{workflow}", {"ledger": ledger}, queue=False)
    with pytest.raises(Crash):
        await rt.resume(task_id)
    return task_id


async def _stale_events(store: StateStore, task_id: str) -> list[Event]:
    return [e for e in await store.list_events(task_id) if e.kind == STALE_EVENT]


async def test_the_worker_sets_aside_a_task_whose_newest_checkpoint_is_too_old(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await _crashed(rt, "step_then_crash", ledger)
    await asyncio.sleep(MAX_AGE + 0.2)

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    task = await store.get_task(task_id)
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.STALE)
    [event] = await _stale_events(store, task_id)
    assert event.message.startswith("set aside: its newest checkpoint (number 1) is ")
    assert f"more than the {MAX_AGE:g} s its checkpoint policy trusts" in event.message
    assert event.message.endswith(f"then `ratchet resume {task_id} --force`")
    assert event.data["checkpoint"] == 1 and event.data["age"] > MAX_AGE  # type: ignore[operator]
    assert len(entries(ledger, "crash")) == 1, "the stale task ran on"
    assert await store.list_triggers(task_id) == []


async def test_a_stale_task_stays_aside_until_a_person_forces_it(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await _crashed(rt, "step_then_crash", ledger)
    await asyncio.sleep(MAX_AGE + 0.2)
    await Worker(store, poll_interval=0.05).run(until_idle=True)

    await Worker(store, poll_interval=0.05).run(until_idle=True)  # another worker: nothing to take
    with pytest.raises(CannotResume, match=r"set aside: its newest checkpoint .* --force`$"):
        await Runtime(store).resume(task_id)

    assert len(await _stale_events(store, task_id)) == 1
    assert len(entries(ledger, "crash")) == 1
    forced = await Runtime(store).resume(task_id, force=True)
    assert (forced.status, forced.result) == (TaskStatus.COMPLETED, "done")
    assert len(entries(ledger, "before")) == 1
    resumed = [e for e in await store.list_events(task_id) if e.kind == "task_resumed"]
    assert resumed[-1].message.endswith(", forced past its stale checkpoint")


async def test_runtime_resume_sets_aside_a_stale_task_as_the_worker_does(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await _crashed(rt, "step_then_crash", ledger)
    await asyncio.sleep(MAX_AGE + 0.2)

    with pytest.raises(CannotResume, match=f"task {task_id} is set aside: its newest checkpoint"):
        await Runtime(store).resume(task_id)

    task = await store.get_task(task_id)
    assert task.waiting_on is WaitReason.STALE
    assert len(await _stale_events(store, task_id)) == 1


async def test_a_task_without_a_checkpoint_is_judged_by_its_last_progress(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await _crashed(rt, "crash_without_steps", ledger)
    assert await store.latest_checkpoint(task_id) is None
    await asyncio.sleep(MAX_AGE + 0.2)

    with pytest.raises(CannotResume, match=r"its last progress \(it has no checkpoint\) is \d+ s old"):
        await Runtime(store).resume(task_id)

    assert (await store.get_task(task_id)).waiting_on is WaitReason.STALE


async def test_a_task_that_moved_lately_resumes_by_itself(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await _crashed(rt, "crash_without_steps", ledger)

    resumed = await Runtime(store).resume(task_id)  # at once: its last progress is fresh

    assert (resumed.status, resumed.result) == (TaskStatus.COMPLETED, "done")
    assert await _stale_events(store, task_id) == []


async def test_a_task_that_never_started_is_started_however_long_it_was_queued(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await rt.submit(f"{STALE_FLOWS}:one_step", {"ledger": ledger})
    await asyncio.sleep(MAX_AGE + 0.2)

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED


async def test_last_progress_is_the_latest_of_operations_events_and_changes(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await _crashed(rt, "crash_without_steps", ledger)
    task = await store.get_task(task_id)
    ops = await store.list_ops(task_id)
    [last_event] = await store.last_events(task_id, 1)

    progress = await last_progress(store, task)

    assert progress == max(
        [task.updated_at, last_event.time, *(op.finished_at or op.started_at for op in ops)]
    )
    policy = CheckpointPolicy(max_age=10)
    assert await judge_staleness(store, task, policy, now=progress + dt.timedelta(seconds=9)) is None
    stale = await judge_staleness(store, task, policy, now=progress + dt.timedelta(seconds=11))
    assert stale is not None and (stale.at, stale.checkpoint, round(stale.age)) == (progress, None, 11)
    assert await judge_staleness(store, task, CheckpointPolicy(), now=progress + dt.timedelta(days=9)) is None

"""`Runtime.cancel_tasks`, `retry_tasks`, `delete_tasks` and retention (`count_expired`, `delete_expired`):
every task a filter keeps, a page at a time, each acted on as alone; on every store. `SyncRuntime` too."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from ratchet import SyncRuntime
from ratchet.engine.batches import act_on_each, task_pages
from ratchet.engine.retention import Retention
from ratchet.errors import InputError, TaskNotFound
from ratchet.records import ALL_TASKS, TaskFilter, TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.builders import make_task
from . import flows

NOW = utcnow()


async def _make(
    store: StateStore, task_id: str, status: TaskStatus, *, days: float = 0, **fields: object
) -> None:
    when = NOW - dt.timedelta(days=days)
    await store.create_task(make_task(task_id, status=status, created_at=when, updated_at=when, **fields))


async def test_each_verb_acts_on_what_the_filters_keep_and_skips_with_why(store: StateStore) -> None:
    rt = Runtime(store)
    done = await rt.run(flows.double, {"n": 1}, labels={"team": "a"})
    queued = await rt.submit(flows.double, {"n": 2}, labels={"team": "a"})
    other = await rt.submit(flows.double, {"n": 3}, labels={"team": "b"})

    cancelled = await rt.cancel_tasks(labels={"team": "a"}, reason="superseded")

    assert (cancelled.action, cancelled.matched, cancelled.done) == ("cancel", 2, 1)
    assert [(s.task_id, s.reason) for s in cancelled.skipped] == [
        (done.id, f"task {done.id} is already completed; it cannot be cancelled")
    ]
    assert (await rt.get_task(queued)).error == "superseded"
    assert (await rt.get_task(other)).status is TaskStatus.QUEUED

    retried = await rt.retry_tasks(status="cancelled")
    assert (retried.matched, retried.done, retried.skipped) == (1, 1, [])
    assert (await rt.get_task(f"{queued}-retry1")).forked_from == queued

    deleted = await rt.delete_tasks(TaskFilter(labels=(("team", "a"),)))
    # newest first: the retry (queued) is skipped, the cancelled and the completed task go
    assert (deleted.matched, deleted.done) == (3, 2)
    assert [s.task_id for s in deleted.skipped] == [f"{queued}-retry1"]
    for task_id in (done.id, queued):
        with pytest.raises(TaskNotFound):
            await rt.get_task(task_id)
    assert deleted.as_json()["skipped"][0]["id"] == f"{queued}-retry1"


async def test_the_tasks_are_given_once_a_filter_or_a_task_filter(store: StateStore) -> None:
    rt = Runtime(store)
    with pytest.raises(InputError, match="say which tasks"):
        await rt.cancel_tasks()
    with pytest.raises(InputError, match="not both"):
        await rt.delete_tasks(ALL_TASKS, status="failed")
    with pytest.raises(InputError, match="unknown status"):
        await rt.retry_tasks(status="done")
    with pytest.raises(InputError, match="NUL"):
        await rt.cancel_tasks(ALL_TASKS, reason="\x00")
    await _make(store, "t1", TaskStatus.QUEUED)
    assert (await rt.cancel_tasks(ALL_TASKS)).done == 1  # every task, said so


async def test_pages_walk_each_task_once_newest_first_and_not_those_made_meanwhile(store: StateStore) -> None:
    for n in range(7):
        await _make(store, f"t{n}", TaskStatus.QUEUED, days=1 - n / 100)
    seen: list[str] = []

    async def act(task_id: str) -> None:
        seen.append(task_id)
        await store.create_task(make_task(f"new-{task_id}"))  # made after the batch started: not walked

    outcome = await act_on_each(store, ALL_TASKS, "look", act, page=2)

    assert seen == [f"t{n}" for n in reversed(range(7))]
    assert (outcome.matched, outcome.done) == (7, 7)
    pages = [[row.id for row in rows] async for rows in task_pages(store, TaskFilter(id_prefix="t"), page=3)]
    assert pages == [["t6", "t5", "t4"], ["t3", "t2", "t1"], ["t0"]]
    looked: list[str] = []

    async def look(task_id: str) -> None:
        looked.append(task_id)

    limited = await act_on_each(store, TaskFilter(id_prefix="t"), "look", look, page=2, limit=3)
    assert (limited.matched, limited.done, looked) == (7, 3, ["t6", "t5", "t4"])


async def test_updated_before_keeps_what_last_changed_before_a_time(store: StateStore) -> None:
    await _make(store, "old", TaskStatus.COMPLETED, days=10)
    await _make(store, "new", TaskStatus.COMPLETED, days=1)

    where = TaskFilter(updated_before=NOW - dt.timedelta(days=5))

    assert [row.id for row in await store.list_task_rows(where)] == ["old"]
    assert (
        await store.count_task_rows(dataclasses.replace(where, statuses=frozenset({TaskStatus.FAILED}))) == 0
    )


async def test_retention_deletes_each_status_after_its_age_and_never_what_has_not_ended(
    store: StateStore,
) -> None:
    rt = Runtime(store)
    await _make(store, "done-40", TaskStatus.COMPLETED, days=40)
    await _make(store, "done-20", TaskStatus.COMPLETED, days=20)
    await _make(store, "failed-40", TaskStatus.FAILED, days=40)
    await _make(store, "failed-100", TaskStatus.FAILED, days=100)
    await _make(store, "cancelled-400", TaskStatus.CANCELLED, days=400)
    await _make(store, "queued-400", TaskStatus.QUEUED, days=400)
    await _make(store, "parent-40", TaskStatus.COMPLETED, days=40)
    await _make(store, "child-40", TaskStatus.COMPLETED, days=40.5, parent_id="parent-40")
    retain = {"completed": "30d", "failed": "90d"}

    assert await rt.count_expired(retain) == {TaskStatus.COMPLETED: 3, TaskStatus.FAILED: 1}
    done = await rt.delete_expired(retain)

    # The child changed first, so it goes first, and its parent after it, in the same pass.
    assert {str(rule): (outcome.matched, outcome.done) for rule, outcome in done.items()} == {
        "completed=30d": (3, 3),
        "failed=90d": (1, 1),
    }
    left = sorted(row.id for row in await store.list_task_rows())
    assert left == ["cancelled-400", "done-20", "failed-40", "queued-400"]
    assert await rt.count_expired(Retention.parse(["cancelled=1w"])) == {TaskStatus.CANCELLED: 1}


async def test_a_parent_whose_child_stays_is_skipped_with_why(store: StateStore) -> None:
    await _make(store, "parent", TaskStatus.COMPLETED, days=40)
    await _make(store, "child", TaskStatus.COMPLETED, days=1, parent_id="parent")

    [outcome] = (await Runtime(store).delete_expired({"completed": "30d"})).values()

    assert (outcome.matched, outcome.done) == (1, 0)
    assert "child task" in outcome.skipped[0].reason


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["running=1d"], "no ended status"),
        (["completed"], "not STATUS=DURATION"),
        (["completed=x"], "not a duration"),
        (["completed=0"], "some time"),
        (["failed=1d", "failed=2d"], "given twice"),
    ],
)
def test_a_retention_that_is_none_is_refused(texts: list[str], expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        Retention.parse(texts)


def test_a_retention_reads_as_written() -> None:
    retention = Retention.parse(["Completed=30d", "cancelled=12h"])
    assert str(retention) == "completed=30d, cancelled=12h"
    assert [rule.seconds for rule in retention.rules] == [30 * 86400, 12 * 3600]
    assert not Retention() and str(Retention()) == "none"


def test_sync_runtime_has_the_batch_verbs(url: str) -> None:
    with SyncRuntime(url) as rt:
        queued = rt.submit(flows.double, {"n": 1}, labels={"team": "a"})
        assert rt.cancel_tasks(labels={"team": "a"}).done == 1
        assert rt.retry_tasks(status="cancelled").done == 1
        # Two days on: past the rule on every store (PostgreSQL deletes by whole UTC days).
        later = utcnow() + dt.timedelta(days=2)
        assert rt.count_expired({"cancelled": "1s"}, now=later) == {TaskStatus.CANCELLED: 1}
        [outcome] = rt.delete_expired({"cancelled": "1s"}, now=later).values()
        assert outcome.done == 1
        assert rt.delete_tasks(id_prefix=queued).done == 0  # the retry is queued: skipped

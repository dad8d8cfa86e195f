"""`ratchet cancel|retry|delete` with the filters of `ratchet tasks`: a count without --yes, every task with
it (each acted on as alone, those refused skipped with why), through the real program on SQLite and
PostgreSQL; a TASK with filters, neither, or a bad filter is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ratchet
from ratchet.errors import TaskNotFound
from ratchet.records import Task, TaskStatus
from ratchet.store import StateStore

from ..helpers.builders import make_task
from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import answer_on_a_terminal, flow, stored_task, with_runtime, with_store

DONE = {"cancel": "cancelled", "retry": "retried", "delete": "deleted"}


def _make(url: str, workflow: str, *, team: str, run: bool = True, **inputs: Any) -> str:
    async def make(runtime: ratchet.Runtime) -> str:
        if run:
            return (await runtime.run(flow(workflow), inputs, labels={"team": team})).id
        return await runtime.submit(flow(workflow), inputs, labels={"team": team})

    return with_runtime(url, make)


class Tasks:
    """Four tasks of team a (completed, failed, completed, queued, made in that order) and one of team b."""

    def __init__(self, url: str) -> None:
        self.completed = _make(url, "three_steps", team="a")
        self.failed = _make(url, "fails_with", team="a", message="the disk is full")
        self.greeted = _make(url, "greet", team="a", who="ops")
        self.queued = _make(url, "three_steps", team="a", run=False)
        self.other = _make(url, "three_steps", team="b", run=False)


@pytest.fixture
def tasks(url: str) -> Tasks:
    return Tasks(url)


def _json(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert isinstance(found, dict)
    return found


def _statuses(url: str, *task_ids: str) -> list[TaskStatus]:
    return [stored_task(url, task_id).status for task_id in task_ids]


def _exists(url: str, task_id: str) -> bool:
    async def look(store: StateStore) -> bool:
        try:
            await store.get_task(task_id)
        except TaskNotFound:
            return False
        return True

    return with_store(url, look)


def test_without_yes_each_verb_counts_the_matches_and_does_nothing(
    run_ratchet: RunRatchet, url: str, tasks: Tasks
) -> None:
    for verb in ("cancel", "retry", "delete"):
        done = run_ratchet(verb, "--label", "team=a", "--store", url)

        assert done.returncode == 0, done.stderr
        assert f"4 tasks match; nothing was {DONE[verb]}. Give --yes to {verb} them." in done.stdout
        for task_id in (tasks.queued, tasks.greeted, tasks.failed, tasks.completed):  # newest first
            assert task_id in done.stdout
        assert tasks.other not in done.stdout
        assert _json(run_ratchet(verb, "--label", "team=a", "--json", "--store", url)) == {
            "action": verb,
            "matched": 4,
        }
    assert _statuses(url, tasks.completed, tasks.failed, tasks.greeted, tasks.queued, tasks.other) == [
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
        TaskStatus.COMPLETED,
        TaskStatus.QUEUED,
        TaskStatus.QUEUED,
    ]


def test_a_dry_run_lists_five_and_says_how_many_more(run_ratchet: RunRatchet, url: str, tasks: Tasks) -> None:
    for _ in range(3):
        _make(url, "three_steps", team="a", run=False)

    done = run_ratchet("cancel", "--label", "team=a", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "… and 2 more" in done.stdout
    assert "7 tasks match; nothing was cancelled. Give --yes to cancel them." in done.stdout
    assert tasks.completed not in done.stdout  # the oldest two are not among the first five
    assert tasks.failed not in done.stdout


def test_a_filter_that_matches_nothing_says_so(run_ratchet: RunRatchet, url: str, tasks: Tasks) -> None:
    done = run_ratchet("delete", "--label", "team=nobody", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "No tasks match those filters" in done.stdout


def test_cancel_with_yes_cancels_what_has_not_ended_and_skips_the_rest(
    run_ratchet: RunRatchet, url: str, tasks: Tasks
) -> None:
    done = run_ratchet("cancel", "--label", "team=a", "--reason", "superseded", "--yes", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "cancelled 1 of 4 matching tasks; 3 skipped" in done.stdout
    assert f"skipped {tasks.completed}: task {tasks.completed} is already completed" in done.stdout
    assert f"skipped {tasks.failed}: task {tasks.failed} is already failed" in done.stdout
    cancelled = stored_task(url, tasks.queued)
    assert (cancelled.status, cancelled.error) == (TaskStatus.CANCELLED, "superseded")
    events = with_store(url, lambda store: store.list_events(tasks.queued))
    assert [event.kind for event in events if event.kind == "task_cancelled"] == ["task_cancelled"]
    assert stored_task(url, tasks.other).status is TaskStatus.QUEUED  # team b


def test_retry_with_yes_retries_each_failed_or_cancelled_task_queued(
    run_ratchet: RunRatchet, url: str, tasks: Tasks
) -> None:
    with_runtime(url, lambda runtime: runtime.cancel(tasks.queued))

    summary = _json(run_ratchet("retry", "--label", "team=a", "--yes", "--json", "--store", url))

    assert (summary["action"], summary["matched"], summary["done"]) == ("retry", 4, 2)
    skipped = {entry["id"]: entry["reason"] for entry in summary["skipped"]}
    assert skipped == {
        tasks.greeted: f"task {tasks.greeted} completed; there is nothing to retry",
        tasks.completed: f"task {tasks.completed} completed; there is nothing to retry",
    }
    for original in (tasks.failed, tasks.queued):
        retry: Task = stored_task(url, f"{original}-retry1")
        assert (retry.status, retry.forked_from, retry.labels) == (TaskStatus.QUEUED, original, {"team": "a"})
    # The retries made are not retried again, though the filter matches them now.
    assert not _exists(url, f"{tasks.failed}-retry1-retry1")


def test_delete_with_yes_deletes_what_may_be_deleted(run_ratchet: RunRatchet, url: str, tasks: Tasks) -> None:
    summary = _json(run_ratchet("delete", "--label", "team=a", "--yes", "--json", "--store", url))

    assert (summary["matched"], summary["done"]) == (4, 3)
    assert summary["skipped"] == [
        {
            "id": tasks.queued,
            "reason": f"task {tasks.queued} is queued; only an ended task can be deleted (cancel it first)",
        }
    ]
    assert [_exists(url, task_id) for task_id in (tasks.completed, tasks.failed, tasks.greeted)] == [
        False
    ] * 3
    assert _exists(url, tasks.queued) and _exists(url, tasks.other)
    assert with_store(url, lambda store: store.list_ops(tasks.completed)) == []


def test_delete_takes_a_tree_children_first(run_ratchet: RunRatchet, url: str) -> None:
    async def tree(store: StateStore) -> tuple[str, str]:
        parent = await store.create_task(make_task("p1", status=TaskStatus.COMPLETED, labels={"tree": "1"}))
        child = await store.create_task(
            make_task("p1-c", status=TaskStatus.COMPLETED, parent_id=parent.id, labels={"tree": "1"})
        )
        return parent.id, child.id

    parent, child = with_store(url, tree)

    done = run_ratchet("delete", "--label", "tree=1", "--yes", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "deleted 2 of 2 matching tasks; 0 skipped" in done.stdout
    assert not _exists(url, parent) and not _exists(url, child)


@pytest.mark.parametrize("verb", ["cancel", "retry", "delete"])
def test_a_task_and_filters_or_neither_is_one_line(run_ratchet: RunRatchet, url: str, verb: str) -> None:
    assert_one_line_error(
        run_ratchet(verb, "t1", "--status", "failed", "--yes", "--store", url),
        "give a TASK or filters",
        "--status",
    )
    assert_one_line_error(run_ratchet(verb, "--yes", "--store", url), f"say which tasks to {verb}")


@pytest.mark.parametrize(
    "bad",
    [
        ("--status", "done"),
        ("--since", "yesterday"),
        ("--label", "team"),
        ("--min-cost", "abc"),
        ("--search", "*"),
    ],
)
def test_a_bad_filter_is_the_line_ratchet_tasks_prints(
    run_ratchet: RunRatchet, url: str, tasks: Tasks, bad: tuple[str, ...]
) -> None:
    listed = assert_one_line_error(run_ratchet("tasks", *bad, "--store", url))
    for verb in ("cancel", "retry", "delete"):
        assert assert_one_line_error(run_ratchet(verb, *bad, "--yes", "--store", url)) == listed
    assert stored_task(url, tasks.queued).status is TaskStatus.QUEUED


def test_a_batch_retry_takes_no_from_step(run_ratchet: RunRatchet, url: str) -> None:
    assert_one_line_error(
        run_ratchet("retry", "--status", "failed", "--from-step", "2", "--yes", "--store", url),
        "--from-step is for one TASK",
    )


def test_one_task_still_works_as_before_with_json(run_ratchet: RunRatchet, url: str, tasks: Tasks) -> None:
    cancelled = _json(run_ratchet("cancel", tasks.queued, "--json", "--store", url))
    assert (cancelled["task_id"], cancelled["status"]) == (tasks.queued, "cancelled")
    deleted = _json(run_ratchet("delete", tasks.completed, "--yes", "--json", "--store", url))
    assert deleted == {"task_id": tasks.completed, "deleted": True}


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_on_a_terminal_it_asks_and_acts_only_on_a_yes(url: str, tasks: Tasks, tmp_path: Path) -> None:
    code, screen = answer_on_a_terminal(tmp_path, "n", "cancel", "--status", "queued", "--store", url)

    assert code == 0
    assert "Cancel these 2 tasks? [y/N]:" in screen
    assert "nothing was cancelled" in screen
    assert _statuses(url, tasks.queued, tasks.other) == [TaskStatus.QUEUED] * 2

    code, screen = answer_on_a_terminal(tmp_path, "y", "cancel", "--status", "queued", "--store", url)

    assert code == 0
    assert "cancelled 2 of 2 matching tasks; 0 skipped" in screen
    assert _statuses(url, tasks.queued, tasks.other) == [TaskStatus.CANCELLED] * 2

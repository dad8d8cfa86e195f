"""Retention: a real `ratchet worker --retain` (or [worker.retain] in ratchet.toml) deletes the ended tasks
kept past their status's age, and only those; `ratchet gc --retain` counts them, and deletes them with
--yes. The old tasks are written with old times through the store's own operations. SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from ratchet.errors import TaskNotFound
from ratchet.records import Event, Operation, OpKind, OpStatus, TaskStatus, WaitReason, utcnow
from ratchet.store import StateStore

from ..helpers.builders import make_task
from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import answer_on_a_terminal, with_store

NOW = utcnow()
# id: (status, days since it last changed, parent)
TASKS: dict[str, tuple[TaskStatus, int, str | None]] = {
    "old-done": (TaskStatus.COMPLETED, 40, None),
    "new-done": (TaskStatus.COMPLETED, 1, None),
    "old-failed": (TaskStatus.FAILED, 40, None),
    "older-failed": (TaskStatus.FAILED, 100, None),
    "old-cancelled": (TaskStatus.CANCELLED, 40, None),
    "old-waiting": (TaskStatus.WAITING, 400, None),
    "old-parent": (TaskStatus.COMPLETED, 40, None),
    "young-child": (TaskStatus.COMPLETED, 1, "old-parent"),
}
RETAIN = ("--retain", "completed=30d", "--retain", "failed=90d")
EXPIRED = {"old-done", "older-failed"}


async def _fill(store: StateStore) -> None:
    for task_id, (status, days, parent) in TASKS.items():
        when = NOW - dt.timedelta(days=days)
        waits = WaitReason.APPROVAL if status is TaskStatus.WAITING else None
        await store.create_task(
            make_task(
                task_id,
                status=status,
                waiting_on=waits,
                parent_id=parent,
                created_at=when - dt.timedelta(hours=1),
                updated_at=when,
            )
        )
    # What a run of it wrote: its journal and an event, all deleted with it.
    for seq in range(2):
        await store.record_op_finished(
            Operation(
                task_id="old-done",
                seq=seq,
                kind=OpKind.TOOL,
                name="shout",
                idempotency_key=f"old-done:{seq}",
                status=OpStatus.SUCCEEDED,
                output="HI",
            )
        )
    await store.append_event(Event(task_id="old-done", kind="note", message="it ran"))


@pytest.fixture
def filled(url: str) -> str:
    with_store(url, _fill)
    return url


def _left(url: str) -> set[str]:
    async def look(store: StateStore) -> set[str]:
        left = set()
        for task_id in TASKS:
            try:
                await store.get_task(task_id)
            except TaskNotFound:
                continue
            left.add(task_id)
        return left

    return with_store(url, look)


def test_a_worker_with_retain_deletes_the_expired_tasks_and_all_of_them(
    run_ratchet: RunRatchet, filled: str
) -> None:
    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", *RETAIN, "--store", filled)

    assert done.returncode == 0, done.stderr
    assert "deletes tasks kept past completed=30d, failed=90d" in done.stdout
    assert _left(filled) == set(TASKS) - EXPIRED
    assert with_store(filled, lambda store: store.list_ops("old-done")) == []
    assert with_store(filled, lambda store: store.list_events("old-done")) == []
    # A task with a child left stays, and says why in the worker's log.
    assert "retention completed=30d: deleted 1 task(s); 1 skipped" in done.stderr
    assert "old-parent" in done.stderr and "child task" in done.stderr


def test_the_retention_of_ratchet_toml_is_the_workers(
    run_ratchet: RunRatchet, filled: str, tmp_path: Path
) -> None:
    (tmp_path / "ratchet.toml").write_text('[worker.retain]\ncancelled = "30d"\n')

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", filled)

    assert done.returncode == 0, done.stderr
    assert _left(filled) == set(TASKS) - {"old-cancelled"}


def test_a_worker_without_retain_deletes_nothing(run_ratchet: RunRatchet, filled: str) -> None:
    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", filled)

    assert done.returncode == 0, done.stderr
    assert "deletes tasks" not in done.stdout
    assert _left(filled) == set(TASKS)


def _json(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert isinstance(found, dict)
    return found


def test_gc_retain_counts_without_yes_and_deletes_with_it(run_ratchet: RunRatchet, filled: str) -> None:
    dry = run_ratchet("gc", *RETAIN, "--store", filled)

    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.strip() == (
        "3 tasks kept past the retention (completed=30d: 2, failed=90d: 1); give --yes to delete them."
    )
    assert _json(run_ratchet("gc", *RETAIN, "--json", "--store", filled)) == {
        "retained": [{"rule": "completed=30d", "matched": 2}, {"rule": "failed=90d", "matched": 1}]
    }
    assert _left(filled) == set(TASKS)

    done = _json(run_ratchet("gc", *RETAIN, "--yes", "--json", "--store", filled))

    [completed, failed] = done["retained"]
    assert (completed["rule"], completed["matched"], completed["done"]) == ("completed=30d", 2, 1)
    assert [skipped["id"] for skipped in completed["skipped"]] == ["old-parent"]
    assert "child task" in completed["skipped"][0]["reason"]
    assert (failed["matched"], failed["done"], failed["skipped"]) == (1, 1, [])
    assert _left(filled) == set(TASKS) - EXPIRED


def test_gc_retain_with_checkpoint_rotation_does_both(run_ratchet: RunRatchet, filled: str) -> None:
    done = run_ratchet("gc", "--keep", "1", "--retain", "completed=30d", "--yes", "--store", filled)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "deleted 0 checkpoints (kept the newest 1 of each task; each task's newest stays)",
        "deleted 1 task kept past completed=30d; 1 skipped",
    ]


@pytest.mark.parametrize(
    ("retain", "expected"),
    [
        ("running=1d", "--retain: 'running' is no ended status; keep one of completed, failed, cancelled"),
        ("completed", "--retain: 'completed' is not STATUS=DURATION"),
        ("completed=soon", "--retain completed: 'soon' is not a duration"),
        ("completed=0s", "--retain completed: keep a task for some time"),
    ],
)
def test_a_bad_retention_is_one_line_before_anything_is_done(
    run_ratchet: RunRatchet, filled: str, retain: str, expected: str
) -> None:
    assert_one_line_error(run_ratchet("gc", "--retain", retain, "--yes", "--store", filled), expected)
    assert_one_line_error(
        run_ratchet("worker", "--until-idle", "--retain", retain, "--store", filled), expected
    )
    assert _left(filled) == set(TASKS)


def test_a_status_given_twice_is_one_line(run_ratchet: RunRatchet, filled: str) -> None:
    assert_one_line_error(
        run_ratchet("gc", "--retain", "failed=1d", "--retain", "failed=2d", "--store", filled), "given twice"
    )


def test_a_bad_retention_in_ratchet_toml_is_one_line(
    run_ratchet: RunRatchet, filled: str, tmp_path: Path
) -> None:
    (tmp_path / "ratchet.toml").write_text('[worker.retain]\nrunning = "30d"\n')

    assert_one_line_error(
        run_ratchet("worker", "--until-idle", "--store", filled), "ratchet.toml, [worker]: retain must be"
    )


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_gc_retain_asks_on_a_terminal(filled: str, tmp_path: Path) -> None:
    code, screen = answer_on_a_terminal(tmp_path, "y", "gc", "--retain", "failed=90d", "--store", filled)

    assert code == 0
    assert "Delete this task (failed=90d: 1)? [y/N]:" in screen
    assert "deleted 1 task kept past failed=90d; 0 skipped" in screen
    assert _left(filled) == set(TASKS) - {"older-failed"}

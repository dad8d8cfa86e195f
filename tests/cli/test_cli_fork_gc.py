"""`ratchet fork` and `ratchet gc`, on a task with three checkpoints (one per step)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratchet.records import Task, TaskStatus

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import run_here, submit, with_store


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def three_steps(url: str) -> Task:
    """A completed task with checkpoints 1, 2 and 3."""
    return run_here(url, "three_steps")


def checkpoint_numbers(url: str, task_id: str) -> list[int]:
    saved = with_store(url, lambda store: store.list_checkpoints(task_id))
    return [checkpoint.number for checkpoint in saved]


# --------------------------------------------------------------------------- fork


def test_fork_makes_a_new_task_that_resumes_from_the_checkpoint(
    run_ratchet: RunRatchet, url: str, three_steps: Task
) -> None:
    done = run_ratchet("fork", three_steps.id, "--checkpoint", "2", "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    forked = json.loads(done.stdout)
    new_id = forked["task_id"]
    assert forked == {"task_id": new_id, "forked_from": three_steps.id, "checkpoint": 2}
    new = with_store(url, lambda store: store.get_task(new_id))
    assert (new.status, new.forked_from) == (TaskStatus.QUEUED, three_steps.id)
    copied = with_store(url, lambda store: store.list_ops(new_id))
    assert [op.seq for op in copied] == [0, 1]  # the journal up to checkpoint 2

    resumed = run_ratchet("resume", new_id, "--json", "--store", url)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["result"] == ["ONE", "TWO", "THREE"]
    assert with_store(url, lambda store: store.get_task(three_steps.id)) == three_steps


def test_fork_says_how_to_run_the_new_task(run_ratchet: RunRatchet, url: str, three_steps: Task) -> None:
    done = run_ratchet("fork", three_steps.id, "--checkpoint", "1", "--store", url)

    assert done.returncode == 0, done.stderr
    new_id = done.stdout.split("new task ")[1].split()[0]
    assert new_id.startswith(f"{three_steps.id}-fork1")
    assert f"ratchet resume --store {url} {new_id}" in done.stdout


def test_fork_from_a_checkpoint_that_does_not_exist(
    run_ratchet: RunRatchet, url: str, three_steps: Task
) -> None:
    done = run_ratchet("fork", three_steps.id, "--checkpoint", "9", "--store", url)

    assert_one_line_error(done, three_steps.id, "no checkpoint 9", "1, 2, 3")


def test_fork_with_changed_inputs_runs_live_on_them_from_the_checkpoint(
    run_ratchet: RunRatchet, url: str
) -> None:
    original = run_here(url, "hello_then_greet", who="hal")
    assert original.result == ["HELLO", "HAL"]

    done = run_ratchet(
        "fork", original.id, "--checkpoint", "1", "--inputs", '{"who": "dave"}', "--json", "--store", url
    )

    assert done.returncode == 0, done.stderr
    forked = json.loads(done.stdout)
    assert forked["changed_inputs"] == ["who"]
    resumed = run_ratchet("resume", forked["task_id"], "--json", "--store", url)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["result"] == ["HELLO", "DAVE"]
    assert with_store(url, lambda store: store.get_task(original.id)).result == ["HELLO", "HAL"]


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ('["dave"]', "--inputs must be a JSON object"),
        ("{who: dave}", "--inputs must be JSON"),
    ],
)
def test_fork_with_inputs_that_are_not_a_json_object_is_one_line(
    run_ratchet: RunRatchet, url: str, three_steps: Task, inputs: str, said: str
) -> None:
    done = run_ratchet("fork", three_steps.id, "--checkpoint", "1", "--inputs", inputs, "--store", url)

    assert_one_line_error(done, said)
    assert checkpoint_numbers(url, three_steps.id) == [1, 2, 3]
    tasks = with_store(url, lambda store: store.list_tasks())
    assert [task.id for task in tasks] == [three_steps.id]  # nothing forked


def test_fork_of_a_task_without_checkpoints(run_ratchet: RunRatchet, url: str) -> None:
    task_id = submit(url, "greet", who="hal")

    done = run_ratchet("fork", task_id, "--checkpoint", "1", "--store", url)

    assert_one_line_error(done, "no checkpoint 1", "none yet")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nope", "--checkpoint", "1"], ["'nope'", "ratchet tasks"]),
        (["nope"], ["give --checkpoint N or --step N"]),
        (["nope", "--checkpoint", "0"], ["--checkpoint"]),
    ],
)
def test_fork_bad_input(
    run_ratchet: RunRatchet, url: str, three_steps: Task, args: list[str], expected: list[str]
) -> None:
    done = run_ratchet("fork", *args, "--store", url)

    assert_one_line_error(done, *expected)


# --------------------------------------------------------------------------- gc


def test_gc_keeps_the_newest_checkpoints(run_ratchet: RunRatchet, url: str, three_steps: Task) -> None:
    kept_two = run_ratchet("gc", "--keep", "2", "--json", "--store", url)
    kept_one = run_ratchet("gc", "--keep", "1", "--store", url)

    assert kept_two.returncode == 0, kept_two.stderr
    assert json.loads(kept_two.stdout) == {"deleted": 1, "keep": 2, "older_than_seconds": None}
    assert kept_one.returncode == 0, kept_one.stderr
    assert "deleted 1 checkpoint " in kept_one.stdout
    assert checkpoint_numbers(url, three_steps.id) == [3]


def test_gc_drops_old_checkpoints_but_never_a_tasks_newest(
    run_ratchet: RunRatchet, url: str, three_steps: Task
) -> None:
    none_that_old = run_ratchet("gc", "--older-than", "7d", "--json", "--store", url)
    all_old = run_ratchet("gc", "--older-than", "0s", "--store", url)

    assert json.loads(none_that_old.stdout) == {
        "deleted": 0,
        "keep": None,
        "older_than_seconds": 7 * 86400,
    }
    assert all_old.returncode == 0, all_old.stderr
    assert "deleted 2 checkpoints" in all_old.stdout
    assert checkpoint_numbers(url, three_steps.id) == [3]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ["--keep N", "--older-than DURATION"]),
        (["--older-than", "soon"], ["'soon' is not a duration", "7d"]),
        (["--keep", "0"], ["--keep", "--help"]),
    ],
)
def test_gc_bad_input(
    run_ratchet: RunRatchet, url: str, three_steps: Task, args: list[str], expected: list[str]
) -> None:
    done = run_ratchet("gc", *args, "--store", url)

    assert_one_line_error(done, *expected)
    assert checkpoint_numbers(url, three_steps.id) == [1, 2, 3]


def test_gc_of_a_missing_database_creates_none(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    done = run_ratchet("gc", "--keep", "1")

    assert_one_line_error(done, "no Ratchet database", "ratchet migrate")
    assert list(tmp_path.iterdir()) == []

"""`ratchet delete`: an ended task goes with everything of it; anything else is bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.errors import TaskNotFound
from ratchet.records import Task

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import run_here, submit, with_store


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def three_steps(url: str) -> Task:
    return run_here(url, "three_steps")


async def _gone(store: object, task_id: str) -> bool:
    try:
        await store.get_task(task_id)  # type: ignore[attr-defined]
    except TaskNotFound:
        return True
    return False


def test_delete_with_yes_removes_the_task_and_its_journal(
    run_ratchet: RunRatchet, url: str, three_steps: Task
) -> None:
    done = run_ratchet("delete", three_steps.id, "--yes", "--store", url)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"task {three_steps.id} deleted"
    assert with_store(url, lambda store: _gone(store, three_steps.id))
    assert with_store(url, lambda store: store.list_ops(three_steps.id)) == []


def test_delete_without_yes_and_no_terminal_deletes_nothing(
    run_ratchet: RunRatchet, url: str, three_steps: Task
) -> None:
    done = run_ratchet("delete", three_steps.id, "--store", url)

    assert_one_line_error(done, "cannot be undone", "--yes")
    assert with_store(url, lambda store: store.get_task(three_steps.id)) == three_steps


def test_delete_of_a_task_that_has_not_ended_is_bad_input(run_ratchet: RunRatchet, url: str) -> None:
    queued = submit(url, "three_steps")

    done = run_ratchet("delete", queued, "--yes", "--store", url)

    assert_one_line_error(done, f"task {queued} is queued", "cancel it first")


def test_delete_of_no_task_is_bad_input(run_ratchet: RunRatchet, url: str, three_steps: Task) -> None:
    assert_one_line_error(run_ratchet("delete", "nobody", "--yes", "--store", url), "nobody")

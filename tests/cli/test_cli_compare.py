"""`ratchet compare`: an origin and its forks with another input, side by side (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ratchet.records import Task

from ..helpers.cli import RunRatchet, assert_one_line_error, table_cells
from .task_support import run_here


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def origin(url: str) -> Task:
    """A completed task whose second step shouts `who`: hal."""
    return run_here(url, "hello_then_greet", who="hal")


def fork_and_run(run_ratchet: RunRatchet, url: str, task: Task, who: str) -> str:
    """Fork `task` after its first step with `who`, run the fork to its end; return its id."""
    forked = run_ratchet(
        "fork", task.id, "--checkpoint", "1", "--inputs", json.dumps({"who": who}), "--json", "--store", url
    )
    assert forked.returncode == 0, forked.stderr
    new_id: str = json.loads(forked.stdout)["task_id"]
    resumed = run_ratchet("resume", new_id, "--store", url)
    assert resumed.returncode == 0, resumed.stderr
    return new_id


def compared(run_ratchet: RunRatchet, url: str, *task_ids: str) -> dict[str, Any]:
    done = run_ratchet("compare", *task_ids, "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def test_a_fork_with_another_input_differs_in_the_call_that_reads_it_and_nowhere_else(
    run_ratchet: RunRatchet, url: str, origin: Task
) -> None:
    fork = fork_and_run(run_ratchet, url, origin, "dave")

    shown = compared(run_ratchet, url, origin.id, fork)

    rows = shown["tool_calls"]
    assert [(row["step"], row["position"], row["mark"]) for row in rows] == [
        (1, 1, "same"),
        (2, 1, "differs"),
    ]
    assert [call["arguments"] for call in rows[1]["calls"]] == [{"text": "hal"}, {"text": "dave"}]
    assert [call["result_preview"] for call in rows[1]["calls"]] == ['"HAL"', '"DAVE"']
    assert [row["same"] for row in shown["steps"]] == [True, True]
    assert (shown["shared_prefix"], shown["parted_at_seq"]) == (1, 1)  # the fork copied seq 0, then parted
    tasks = shown["tasks"]
    assert [(side["task_id"], side["forked_from"]) for side in tasks] == [
        (origin.id, None),
        (fork, origin.id),
    ]
    assert [side["result"] for side in tasks] == [["HELLO", "HAL"], ["HELLO", "DAVE"]]
    assert all(side["wall_seconds"] is not None for side in tasks)

    table = run_ratchet("compare", origin.id, fork, "--store", url)

    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[:3] == [
        "Comparing 2 tasks:",
        f"  A  {origin.id} (hello_then_greet)",
        f"  B  {fork} (hello_then_greet, forked from A)",
    ]
    marks = {table_cells(line)[0]: table_cells(line)[-1] for line in lines if line.startswith(("1.1", "2.1"))}
    assert marks == {"1.1": "same", "2.1": "differs"}
    for row in ("status", "result", "tokens in / out", "cost", "wall time"):
        assert any(line.startswith(row) for line in lines), row
    assert lines[-1] == "Their journals share their first 1 call and part at seq 1."


def test_three_tasks_side_by_side(run_ratchet: RunRatchet, url: str, origin: Task) -> None:
    dave = fork_and_run(run_ratchet, url, origin, "dave")
    hal = fork_and_run(run_ratchet, url, origin, "hal")

    shown = compared(run_ratchet, url, origin.id, dave, hal)

    assert [side["task_id"] for side in shown["tasks"]] == [origin.id, dave, hal]
    rows = shown["tool_calls"]
    assert [row["mark"] for row in rows] == ["same", "differs"]
    assert [call["arguments"] for call in rows[1]["calls"]] == [
        {"text": "hal"},
        {"text": "dave"},
        {"text": "hal"},
    ]
    assert shown["parted_at_seq"] == 1

    alike = compared(run_ratchet, url, origin.id, hal)

    assert [row["mark"] for row in alike["tool_calls"]] == ["same", "same"]
    assert (alike["shared_prefix"], alike["parted_at_seq"]) == (2, None)


def test_a_task_not_run_yet_has_no_calls_to_compare(run_ratchet: RunRatchet, url: str, origin: Task) -> None:
    forked = run_ratchet("fork", origin.id, "--checkpoint", "1", "--json", "--store", url)
    new_id = json.loads(forked.stdout)["task_id"]

    shown = compared(run_ratchet, url, origin.id, new_id)

    assert [(row["mark"], row["only_in"]) for row in shown["tool_calls"]] == [
        ("same", []),
        ("only in", [origin.id]),
    ]
    assert shown["tasks"][1]["status"] == "queued"
    assert (shown["tasks"][1]["ended_at"], shown["tasks"][1]["wall_seconds"]) == (None, None)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ([], "at least 2 task ids; 1 given"),
        (["ORIGIN"], "is given twice"),
        ([f"t{n}" for n in range(8)], "at most 8 task ids; 9 given"),
        (["no-such-task"], "no task with id 'no-such-task'"),
    ],
)
def test_what_it_cannot_compare_is_one_line(
    run_ratchet: RunRatchet, url: str, origin: Task, extra: list[str], said: str
) -> None:
    ids = [origin.id, *(origin.id if task_id == "ORIGIN" else task_id for task_id in extra)]

    done = run_ratchet("compare", *ids, "--store", url)

    assert_one_line_error(done, said)


def test_no_ids_at_all_is_a_usage_error(run_ratchet: RunRatchet, url: str) -> None:
    done = run_ratchet("compare", "--store", url)

    assert_one_line_error(done, "Missing argument 'TASK'")

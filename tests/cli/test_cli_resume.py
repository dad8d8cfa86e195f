"""`ratchet resume`, run as a real program on tasks made with the Python API."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from ratchet.engine.run.holders import pid_space_here
from ratchet.records import TaskStatus

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import (
    claim,
    gone_pid,
    run_here,
    start_ratchet,
    stop_with,
    submit,
    this_host,
    wait_for_file,
    with_store,
)

OUTCOME_KEYS = {"task_id", "status", "waiting_on", "result", "error"}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def outcome(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The JSON object on the last line of stdout."""
    assert "Traceback" not in done.stderr
    shown: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    assert set(shown) == OUTCOME_KEYS
    return shown


def test_resume_runs_a_submitted_task_to_completion(run_ratchet: RunRatchet, url: str) -> None:
    task_id = submit(url, "greet", who="ann")

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, done.stderr
    assert "Started greet" in done.stdout  # progress, as it happens
    assert f"task {task_id} completed" in done.stdout
    assert '{"greeting": "HELLO ANN"}' in done.stdout
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.COMPLETED


def test_resume_json_ends_with_the_outcome(run_ratchet: RunRatchet, url: str) -> None:
    task_id = submit(url, "greet", who="bob")

    done = run_ratchet("resume", task_id, "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    assert outcome(done) == {
        "task_id": task_id,
        "status": "completed",
        "waiting_on": None,
        "result": {"greeting": "HELLO BOB"},
        "error": None,
    }


@pytest.mark.parametrize(
    ("workflow", "code", "status", "waiting_on"),
    [("breaks", 1, "failed", None), ("naps", 4, "waiting", "timer")],
)
def test_the_exit_code_says_how_the_task_was_left(
    run_ratchet: RunRatchet, url: str, workflow: str, code: int, status: str, waiting_on: str | None
) -> None:
    task_id = submit(url, workflow)

    done = run_ratchet("resume", task_id, "--json", "--store", url)

    assert done.returncode == code, done.stderr
    shown = outcome(done)
    assert (shown["status"], shown["waiting_on"]) == (status, waiting_on)
    if workflow == "breaks":
        assert shown["error"] == "ValueError: the disk is full"


def test_a_failed_task_says_why_and_where_to_look(run_ratchet: RunRatchet, url: str) -> None:
    task_id = submit(url, "breaks")

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 1
    assert "error: ValueError: the disk is full" in done.stdout
    assert f"ratchet events --store {url} {task_id}" in done.stdout


def test_a_completed_task_is_not_run_again_its_outcome_is_printed(run_ratchet: RunRatchet, url: str) -> None:
    task = run_here(url, "greet", who="cy")

    done = run_ratchet("resume", task.id, "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    assert outcome(done)["status"] == "completed"
    assert with_store(url, lambda store: store.list_events(task.id))[-1].kind == "task_completed"


def test_an_unknown_task_creates_no_database(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    done = run_ratchet("resume", "nope")

    assert_one_line_error(done, "'nope'", "ratchet tasks")
    assert list(tmp_path.iterdir()) == []


def test_a_task_held_by_a_live_worker_is_refused_naming_the_holder(run_ratchet: RunRatchet, url: str) -> None:
    task_id = submit(url, "greet", who="di")
    held = claim(url, task_id, "other", host="elsewhere", pid=1)

    done = run_ratchet("resume", task_id, "--store", url)

    assert_one_line_error(done, task_id, "other", "elsewhere", f"{held.expires_at:%H:%M:%S}")
    assert with_store(url, lambda store: store.get_lease(task_id)) == held


def test_a_task_whose_holder_died_on_this_host_is_taken_over_at_once(
    run_ratchet: RunRatchet, url: str
) -> None:
    task_id = submit(url, "greet", who="ed")
    claim(url, task_id, "crashed", host=this_host(), pid=gone_pid(), pid_space=pid_space_here())

    done = run_ratchet("resume", task_id, "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    assert outcome(done)["status"] == "completed"


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_a_signal_stops_the_run_cleanly_and_says_how_to_go_on(
    tmp_path: Path, url: str, signum: signal.Signals, code: int, said: str
) -> None:
    marker = tmp_path / "lingering"
    task_id = submit(url, "lingers", marker=str(marker), seconds=60)
    running = start_ratchet(tmp_path, "resume", task_id, "--store", url)
    wait_for_file(marker, running)

    out, err = stop_with(running, signum)

    assert running.returncode == code, (out, err)
    assert "Traceback" not in out + err
    [line] = err.splitlines()
    assert line.startswith(f"{said}: task {task_id}")
    assert f"`ratchet resume --store {url} {task_id}`" in line
    lease = with_store(url, lambda store: store.get_lease(task_id))
    assert lease is not None and not lease.is_live()
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.RUNNING

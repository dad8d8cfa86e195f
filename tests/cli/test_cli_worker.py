"""`ratchet worker`, run as a real program."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from ratchet.records import TaskStatus

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import FLOWS, start_ratchet, stop_with, stored_task, submit, wait_for_file, with_store


def test_until_idle_runs_every_queued_task_then_stops(run_ratchet: RunRatchet, url: str) -> None:
    first = submit(url, "greet", who="ann")
    second = submit(url, "three_steps")

    done = run_ratchet(
        "worker",
        "--until-idle",
        "--poll",
        "0.05",
        "--name",
        "w1",
        "--concurrency",
        "2",
        "--workflows",
        str(FLOWS),
        "--store",
        url,
    )

    assert done.returncode == 0, done.stderr
    [started] = done.stdout.splitlines()
    assert "w1" in started and url in started and "concurrency 2" in started
    for task_id in (first, second):
        task = stored_task(url, task_id)
        assert task.status is TaskStatus.COMPLETED
        assert f"task {task_id}: taken" in done.stderr
        assert f"task {task_id}: completed" in done.stderr
    assert "INFO ratchet.worker" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_lets_the_call_in_flight_finish_then_hands_the_task_back(
    run_ratchet: RunRatchet, tmp_path: Path, url: str, signum: signal.Signals
) -> None:
    marker = tmp_path / "lingering"
    task_id = submit(url, "lingers_then_shouts", marker=str(marker), seconds=1.5)
    worker = start_ratchet(tmp_path, "worker", "--poll", "0.05", "--store", url)
    wait_for_file(marker, worker)

    out, err = stop_with(worker, signum)

    assert worker.returncode == 0, (out, err)
    assert "Traceback" not in out + err
    assert f"{signum.name}: stopping" in err
    assert f"task {task_id}: handed back" in err
    # The call in flight finished and was recorded; the next one never started.
    ops = with_store(url, lambda store: store.list_ops(task_id))
    assert [(op.name, op.status) for op in ops] == [("linger", "succeeded")]
    lease = with_store(url, lambda store: store.get_lease(task_id))
    assert lease is not None and lease.released
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.RUNNING

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)

    assert done.returncode == 0, done.stderr
    task = with_store(url, lambda store: store.get_task(task_id))
    assert (task.status, task.result) == (TaskStatus.COMPLETED, "DONE")
    assert marker.read_text() == "began\n", "the finished call ran again"


@pytest.mark.parametrize("how", ["second signal", "grace"])
def test_a_long_call_is_cancelled_by_a_second_signal_or_after_the_grace(
    tmp_path: Path, url: str, how: str
) -> None:
    marker = tmp_path / "lingering"
    task_id = submit(url, "lingers", marker=str(marker), seconds=60)
    grace = "0.5" if how == "grace" else "60"
    worker = start_ratchet(tmp_path, "worker", "--poll", "0.05", "--grace", grace, "--store", url)
    wait_for_file(marker, worker)

    if how == "second signal":
        worker.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # the first signal is heard; the second must not wait for the call
    out, err = stop_with(worker, signal.SIGTERM)

    assert worker.returncode == 0, (out, err)
    assert "Traceback" not in out + err
    lease = with_store(url, lambda store: store.get_lease(task_id))
    assert lease is not None and lease.released
    # left for the next worker, not failed; the cancelled call is settled on resume
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.RUNNING


def test_a_worker_with_nothing_to_do_stops_at_once_when_idle(run_ratchet: RunRatchet, url: str) -> None:
    done = run_ratchet("worker", "--until-idle", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "stops when no work is left" in done.stdout


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("no_such_module_here", ["no_such_module_here"]),
        ("missing.py", ["no Python file", "missing.py"]),
        ("broken.py", ["broken.py", "RuntimeError: half-written"]),
    ],
)
def test_workflows_that_cannot_be_imported(
    run_ratchet: RunRatchet, tmp_path: Path, url: str, source: str, expected: list[str]
) -> None:
    (tmp_path / "broken.py").write_text('raise RuntimeError("half-written")\n')

    done = run_ratchet("worker", "--workflows", source, "--until-idle", "--store", url)

    assert_one_line_error(done, *expected)


@pytest.mark.parametrize("option", [["--concurrency", "0"], ["--poll", "0"], ["--lease-ttl", "0.5"]])
def test_bad_worker_options(run_ratchet: RunRatchet, url: str, option: list[str]) -> None:
    done = run_ratchet("worker", *option, "--until-idle", "--store", url)

    assert_one_line_error(done, option[0], "--help")


def test_a_password_in_the_store_url_is_never_printed(run_ratchet: RunRatchet, postgres_url: str) -> None:
    # The test cluster trusts local users: any password will do.
    with_password = postgres_url.replace("postgres@", "postgres:s3cret@", 1)
    assert with_password != postgres_url
    for args in (["migrate"], ["tasks"], ["schedules"], ["worker", "--until-idle"]):
        done = run_ratchet(*args, "--store", with_password)
        assert done.returncode == 0, done.stderr
        assert "s3cret" not in done.stdout + done.stderr
        assert "postgres:***@" in done.stdout + done.stderr

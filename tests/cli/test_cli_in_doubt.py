"""A tool call caught in flight: `resume` stops on it, `show` names it, `resolve` settles it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.records import OpStatus, TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_runner, table_cells
from .task_support import leave_send_email_in_flight, run_here, submit, with_store

SENT = {"sent_to": "ops@example.com", "subject": "deployed"}


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def last_json(stdout: str) -> dict[str, object]:
    printed: dict[str, object] = json.loads(stdout.splitlines()[-1])
    return printed


def test_resume_stops_on_the_call_in_doubt_and_a_person_settles_it(run_ratchet: RunRatchet, url: str) -> None:
    task_id = leave_send_email_in_flight(url)

    stopped = run_ratchet("resume", task_id, "--json", "--store", url)

    assert stopped.returncode == 3, stopped.stderr
    assert last_json(stopped.stdout)["status"] == "waiting"
    assert last_json(stopped.stdout)["waiting_on"] == "in_doubt"

    shown = run_ratchet("show", task_id, "--store", url)

    assert shown.returncode == 0, shown.stderr
    _title, header, _rule, row, *_ = shown.stdout[shown.stdout.index("In doubt") :].splitlines()
    assert table_cells(header)[:2] == ["seq", "tool"] and table_cells(row)[:2] == ["0", "send_email"]
    assert "ops@example.com" in shown.stdout
    resolve = f"ratchet resolve --store {url} {task_id} --op 0"
    for choice in ("--retry", "--skip", "--result JSON"):
        assert f"{resolve} {choice}" in shown.stdout

    again = run_ratchet("resume", task_id, "--store", url)

    assert_one_line_error(again, "in_doubt", "send_email", resolve)

    settled = run_ratchet("resolve", task_id, "--op", "0", "--skip", "--store", url)

    assert settled.returncode == 0, settled.stderr
    assert "send_email" in settled.stdout
    assert f"ratchet resume --store {url} {task_id}" in settled.stdout

    finished = run_ratchet("resume", task_id, "--json", "--store", url)

    assert finished.returncode == 0, finished.stderr
    assert last_json(finished.stdout)["result"] == {"email": None}  # skipped: not sent again
    [op] = with_store(url, lambda store: store.list_ops(task_id))
    assert (op.status, op.attempt, op.output) == (OpStatus.SUCCEEDED, 1, None)


def test_show_json_lists_the_operation_in_doubt(run_ratchet: RunRatchet, url: str) -> None:
    task_id = leave_send_email_in_flight(url)
    assert run_ratchet("resume", task_id, "--store", url).returncode == 3

    shown = run_ratchet("show", task_id, "--json", "--store", url)

    [op] = json.loads(shown.stdout)["in_doubt"]
    assert (op["seq"], op["name"], op["input"]["to"]) == (0, "send_email", "ops@example.com")


@pytest.mark.parametrize(
    ("choice", "email"),
    [(["--retry"], SENT), (["--result", '{"id": 7}'], {"id": 7})],
)
def test_each_way_of_settling_reaches_the_workflow(
    run_ratchet: RunRatchet, url: str, choice: list[str], email: object
) -> None:
    task_id = leave_send_email_in_flight(url)
    assert run_ratchet("resume", task_id, "--store", url).returncode == 3

    settled = run_ratchet("resolve", task_id, "--op", "0", *choice, "--store", url)
    finished = run_ratchet("resume", task_id, "--json", "--store", url)

    assert settled.returncode == 0, settled.stderr
    assert finished.returncode == 0, finished.stderr
    assert last_json(finished.stdout)["result"] == {"email": email}


# --------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def in_doubt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunRatchet, str, str]]:
    """One task waiting(in_doubt) on operation 0, shared by the bad-input tests (none changes it)."""
    where = tmp_path_factory.mktemp("in_doubt")
    url = f"sqlite:///{where / 'ratchet.db'}"
    run = ratchet_runner(where)
    task_id = leave_send_email_in_flight(url)
    assert run("resume", task_id, "--store", url).returncode == 3
    yield run, url, task_id
    task = with_store(url, lambda store: store.get_task(task_id))
    assert task.waiting_on is WaitReason.IN_DOUBT  # no bad input touched it


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ["exactly one of --retry, --skip or --result"]),
        (["--retry", "--skip"], ["exactly one of"]),
        (["--skip", "--result", "1"], ["exactly one of"]),
        (["--result", "{oops"], ["--result is not JSON", "--result '{\"id\": 42}'"]),
        (["--result", "sent"], ["--result is not JSON"]),
    ],
)
def test_resolve_needs_exactly_one_valid_choice(
    in_doubt: tuple[RunRatchet, str, str], args: list[str], expected: list[str]
) -> None:
    run, url, task_id = in_doubt

    done = run("resolve", task_id, "--op", "0", *args, "--store", url)

    assert_one_line_error(done, *expected)


def test_resolve_of_an_operation_not_in_doubt(in_doubt: tuple[RunRatchet, str, str]) -> None:
    run, url, task_id = in_doubt

    done = run("resolve", task_id, "--op", "5", "--skip", "--store", url)

    assert_one_line_error(done, "operation 5", "not in doubt")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--skip"], ["Missing option '--op'"]),
        (["--op", "-1", "--skip"], ["--op"]),
        (["--op", "first", "--skip"], ["--op"]),
    ],
)
def test_resolve_needs_an_operation(
    in_doubt: tuple[RunRatchet, str, str], args: list[str], expected: list[str]
) -> None:
    run, url, task_id = in_doubt

    done = run("resolve", task_id, *args, "--store", url)

    assert_one_line_error(done, *expected, "--help")


def test_resolve_of_a_task_not_in_doubt(run_ratchet: RunRatchet, url: str) -> None:
    queued = submit(url, "greet", who="fay")
    completed = run_here(url, "greet", who="gus")

    for task_id, status in ((queued, "queued"), (completed.id, "completed")):
        done = run_ratchet("resolve", task_id, "--op", "0", "--skip", "--store", url)

        assert_one_line_error(done, task_id, status, "not waiting on an in-doubt operation")
    assert with_store(url, lambda store: store.get_task(queued)).status is TaskStatus.QUEUED


def test_resolve_of_an_unknown_task(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    done = run_ratchet("resolve", "nope", "--op", "0", "--skip")

    assert_one_line_error(done, "'nope'")
    assert list(tmp_path.iterdir()) == []

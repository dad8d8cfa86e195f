"""`ratchet approve`, `deny` and `answer`, and how `show`, `tasks` and `resume` present a waiting task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratchet.records import TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import run_here, with_store


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def _announcing(url: str, tmp_path: Path) -> tuple[str, Path]:
    ledger = tmp_path / "posts.txt"
    task = run_here(url, "announce", channel="#ops", ledger=str(ledger))
    assert task.waiting_on is WaitReason.APPROVAL, task.error
    return task.id, ledger


def test_a_waiting_approval_is_shown_then_approved_with_edited_arguments(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    task_id, ledger = _announcing(url, tmp_path)

    listed = run_ratchet("tasks", "--status", "waiting", "--store", url)
    assert task_id in listed.stdout and "waiting(approval)" in listed.stdout
    shown = run_ratchet("show", task_id, "--store", url)
    assert shown.returncode == 0, shown.stderr
    for text in (
        "Waiting for approval",
        "post",
        "#ops",
        "external_action",
        "ratchet approve",
        "ratchet deny",
    ):
        assert text in shown.stdout
    as_json = json.loads(run_ratchet("show", task_id, "--json", "--store", url).stdout)
    [approval] = as_json["pending_approvals"]
    assert (approval["tool"], approval["step"], approval["status"]) == ("post", 1, "pending")
    early = run_ratchet("resume", task_id, "--store", url)
    assert_one_line_error(early, f"task {task_id} is waiting for an approval of post", "ratchet approve")

    edited = json.dumps({"channel": "#releases", "text": "deployed", "ledger": str(ledger)})
    approved = run_ratchet("approve", task_id, "--edit-args", edited, "--store", url)
    assert approved.returncode == 0, approved.stderr
    assert "approved post" in approved.stdout and "#releases" in approved.stdout
    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, (done.stdout, done.stderr)
    assert ledger.read_text() == "#releases: deployed\n"
    assert with_store(url, lambda s: s.get_task(task_id)).result == {"posted_to": "#releases"}


def test_a_denied_call_does_not_run_and_the_reason_reaches_the_workflow(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    task_id, ledger = _announcing(url, tmp_path)

    no_reason = run_ratchet("deny", task_id, "--store", url)
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr
    denied = run_ratchet("deny", task_id, "--reason", "release freeze", "--store", url)
    assert denied.returncode == 0, denied.stderr
    assert "denied post" in denied.stdout
    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not ledger.exists()
    task = with_store(url, lambda s: s.get_task(task_id))
    assert task.result == {"not_posted": "denied by a person: release freeze"}


def test_a_question_is_shown_and_answered(run_ratchet: RunRatchet, url: str) -> None:
    task = run_here(url, "asks_region")
    assert task.waiting_on is WaitReason.INPUT

    shown = run_ratchet("show", task.id, "--store", url)
    assert "Waiting for an answer: Which region?" in shown.stdout and "ratchet answer" in shown.stdout
    shown_json = json.loads(run_ratchet("show", task.id, "--json", "--store", url).stdout)
    assert shown_json["question"] == "Which region?"
    answered = run_ratchet("answer", task.id, "eu-west-1", "--store", url)
    assert answered.returncode == 0, answered.stderr
    done = run_ratchet("resume", task.id, "--store", url)

    assert done.returncode == 0, (done.stdout, done.stderr)
    finished = with_store(url, lambda s: s.get_task(task.id))
    assert (finished.status, finished.result) == (TaskStatus.COMPLETED, "eu-west-1")


def test_settling_what_a_task_does_not_wait_for_is_one_line(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    task_id, _ = _announcing(url, tmp_path)
    assert_one_line_error(
        run_ratchet("answer", task_id, "yes", "--store", url),
        f"task {task_id} is waiting(approval), not waiting for an answer",
    )
    assert_one_line_error(
        run_ratchet("approve", task_id, "--edit-args", "{nope", "--store", url), "--edit-args is not JSON"
    )
    assert_one_line_error(
        run_ratchet("approve", task_id, "--edit-args", "[1]", "--store", url), "must be a JSON object"
    )
    assert_one_line_error(run_ratchet("approve", "no-such-task", "--store", url), "no-such-task")
    assert run_ratchet("approve", task_id, "--store", url).returncode == 0
    assert_one_line_error(
        run_ratchet("deny", task_id, "--reason", "late", "--store", url),
        f"post (operation 0) of task {task_id} was approved already, at ",
        "nothing was changed",
    )
    assert run_ratchet("resume", task_id, "--store", url).returncode == 0
    assert_one_line_error(
        run_ratchet("approve", task_id, "--store", url),
        f"task {task_id} is completed, not waiting for an approval",
    )


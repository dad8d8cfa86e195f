"""`ratchet approve`, `deny` and `answer`, and how `show`, `tasks` and `resume` present a waiting task."""

from __future__ import annotations

import datetime as dt
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


def test_an_approved_task_says_what_runs_its_call_and_a_second_approval_says_it_was_approved(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    task_id, ledger = _announcing(url, tmp_path)
    assert run_ratchet("approve", task_id, "--store", url).returncode == 0
    [approval] = with_store(url, lambda s: s.list_approvals(task_id))
    assert approval.decided_at is not None
    resume = f"ratchet resume --store {url} {task_id}"

    shown = run_ratchet("show", task_id, "--store", url)
    as_json = json.loads(run_ratchet("show", task_id, "--json", "--store", url).stdout)
    again = run_ratchet("approve", task_id, "--store", url)

    assert shown.returncode == 0, shown.stderr
    local = approval.decided_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    arguments = json.dumps({"channel": "#ops", "text": "deployed", "ledger": str(ledger)})
    assert (
        f"Next\n  Approved at {local}: post {arguments} (operation 0); it has not run yet.\n" in shown.stdout
    )
    assert (
        f"  It runs when a running `ratchet worker` picks the task up, or now with `{resume}`.\n"
        in shown.stdout
    )
    assert "ratchet approve" not in shown.stdout.split("Latest events")[0]  # nothing is asked of a person
    assert as_json["decided_approval"]["seq"] == 0 and as_json["decided_approval"]["status"] == "approved"
    assert as_json["next"].startswith("Approved at ") and "picks the task up" in as_json["next"]
    utc = approval.decided_at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert_one_line_error(
        again,
        f"error: post (operation 0) of task {task_id} was approved already, at {utc} UTC; nothing was "
        "changed: the call runs when a running `ratchet worker` picks the task up, or with "
        f"`ratchet resume {task_id}`",
    )
    assert with_store(url, lambda s: s.list_approvals(task_id)) == [approval]
    assert run_ratchet("resume", task_id, "--store", url).returncode == 0
    assert ledger.read_text() == "#ops: deployed\n"  # approved twice, posted once
    assert "Next" not in run_ratchet("show", task_id, "--store", url).stdout


def test_a_task_waiting_on_a_timer_says_when_it_continues(run_ratchet: RunRatchet, url: str) -> None:
    napping = run_here(url, "naps")
    assert napping.waiting_on is WaitReason.TIMER
    [wake] = with_store(url, lambda s: s.list_triggers(napping.id))
    asking = run_here(url, "asks_region")
    assert run_ratchet("answer", asking.id, "eu-west-1", "--store", url).returncode == 0

    nap = run_ratchet("show", napping.id, "--store", url)
    answered = run_ratchet("show", asking.id, "--store", url)

    at = wake.fire_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert (
        f"Next\n  It continues at {at}: a running `ratchet worker` picks it up then, "
        f"or `ratchet resume --store {url} {napping.id}` after that.\n"
    ) in nap.stdout
    assert (
        "Next\n  It continues when a running `ratchet worker` picks the task up, "
        f"or now with `ratchet resume --store {url} {asking.id}`.\n"
    ) in answered.stdout

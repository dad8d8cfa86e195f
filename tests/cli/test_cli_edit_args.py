"""`ratchet approve --edit-args`: checked against the tool's arguments first, and shown as used after."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import JsonValue

from ratchet.records import ApprovalStatus, OpStatus, TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import FLOWS, run_here, with_runtime, with_store


def _announcing(url: str, ledger: Path, workflow: str | None = None) -> str:
    """A task whose `post` call waits for approval, of `announce` in flows.py or in `workflow`."""
    inputs: dict[str, JsonValue] = {"channel": "#ops", "ledger": str(ledger)}
    if workflow is None:
        task = run_here(url, "announce", **inputs)
    else:
        task = with_runtime(url, lambda runtime: runtime.run(workflow, inputs))
    assert task.waiting_on is WaitReason.APPROVAL, task.error
    return task.id


@pytest.mark.parametrize(
    ("edited", "problem"),
    [
        ({"channel": "#releases"}, "text: Field required"),
        (
            {"channel": "#releases", "text": "hi", "ledger": "x", "cc": "#all"},
            "cc: Extra inputs are not permitted",
        ),
        ({"channel": ["#releases"], "text": "hi", "ledger": "x"}, "channel: Input should be a valid string"),
    ],
)
def test_edited_arguments_that_do_not_fit_the_tool_are_one_error_line_and_change_nothing(
    run_ratchet: RunRatchet, url: str, tmp_path: Path, edited: dict[str, object], problem: str
) -> None:
    ledger = tmp_path / "posts.txt"
    task_id = _announcing(url, ledger)
    shown_before = run_ratchet("show", task_id, "--json", "--store", url).stdout

    done = run_ratchet("approve", task_id, "--edit-args", json.dumps(edited), "--store", url)

    assert_one_line_error(done, "the edited arguments do not fit: bad arguments for post", problem)
    assert "nothing was approved" in done.stderr and "still waits for approval of operation 0" in done.stderr
    shown_after = run_ratchet("show", task_id, "--json", "--store", url).stdout
    assert json.loads(shown_after) == json.loads(shown_before)
    [approval] = json.loads(shown_after)["pending_approvals"]
    assert approval["status"] == "pending" and approval["edited_arguments"] is None
    assert not ledger.exists()


def test_the_events_show_the_arguments_the_call_ran_with(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "posts.txt"
    task_id = _announcing(url, ledger)
    edited = {"channel": "#releases", "text": "deployed", "ledger": str(ledger)}

    approved = run_ratchet("approve", task_id, "--edit-args", json.dumps(edited), "--store", url)
    resumed = run_ratchet("resume", task_id, "--store", url)

    assert approved.returncode == 0, approved.stderr
    assert f"approved post {json.dumps(edited)} (operation 0)" in approved.stdout
    assert "could not be checked" not in approved.stdout
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert ledger.read_text() == "#releases: deployed\n"
    listed = run_ratchet("events", task_id, "--json", "--store", url).stdout
    events = [json.loads(line) for line in listed.splitlines()]
    [decided] = [e for e in events if e["kind"] == "approved"]
    assert f"with the arguments {json.dumps(edited)}" in decided["message"]
    [call] = [e for e in events if e["kind"] == "tool_call"]
    assert call["data"]["arguments"] == edited
    assert call["message"].startswith("tool call 0: post(channel='#releases', text='deployed'")
    op = with_store(url, lambda store: store.get_op(task_id, 0))
    assert op is not None and op.input == edited  # the journal too
    shown = run_ratchet("events", task_id, "--store", url).stdout
    assert "-> post(channel='#releases', text='deployed'" in shown


def test_arguments_whose_tool_is_not_here_are_checked_when_the_call_runs(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    code = tmp_path / "announcing.py"
    shutil.copy(FLOWS, code)
    ledger = tmp_path / "posts.txt"
    task_id = _announcing(url, ledger, f"{code}:announce")
    edited = {"channel": "#releases", "text": "deployed", "ledger": str(ledger), "cc": "#all"}
    code.rename(tmp_path / "elsewhere.py")  # the code is on another machine, as far as `approve` can tell

    approved = run_ratchet("approve", task_id, "--edit-args", json.dumps(edited), "--store", url)

    assert approved.returncode == 0, approved.stderr
    assert "Its arguments could not be checked here" in approved.stdout
    assert "the call checks them when it runs" in approved.stdout
    (tmp_path / "elsewhere.py").rename(code)  # where the worker runs it
    resumed = run_ratchet("resume", task_id, "--store", url)

    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    task = with_store(url, lambda store: store.get_task(task_id))
    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.result, dict) and isinstance(task.result["not_posted"], str)
    assert task.result["not_posted"].startswith("the arguments a person approved do not fit")
    assert "cc: Extra inputs are not permitted" in task.result["not_posted"]
    assert not ledger.exists()  # the tool never ran with them
    op = with_store(url, lambda store: store.get_op(task_id, 0))
    assert op is not None and (op.status, op.input) == (OpStatus.FAILED, edited)
    approval = with_store(url, lambda store: store.get_approval(task_id, 0))
    assert approval is not None and approval.status is ApprovalStatus.APPROVED

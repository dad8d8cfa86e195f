"""`ratchet budget set|list|delete`, and a cap a real worker holds a task to: on a SQLite file and
on PostgreSQL, each command a program of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ratchet.records import TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error
from ..helpers.scripts import plan, say, verdict
from .task_support import stored_task


def listed(run_ratchet: RunRatchet, url: str) -> list[dict[str, Any]]:
    done = run_ratchet("budget", "list", "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    caps: list[dict[str, Any]] = json.loads(done.stdout)
    return caps


def test_caps_are_set_listed_replaced_and_deleted(url: str, run_ratchet: RunRatchet) -> None:
    done = run_ratchet("budget", "set", "--agent", "agent", "--daily", "0.5", "--store", url)
    assert done.returncode == 0, done.stderr
    assert (
        "spend cap agent:agent: 0.5 USD a UTC day (0 spent today); at the cap a model call fails"
        in done.stdout
    )
    done = run_ratchet(
        "budget", "set", "--label", "team=red", "--daily", "2", "--approve-over", "--store", url
    )
    assert done.returncode == 0, done.stderr
    done = run_ratchet("budget", "set", "--agent", "agent", "--daily", "3", "--store", url)
    assert done.returncode == 0, done.stderr

    caps = listed(run_ratchet, url)
    assert [(c["cap"], c["daily"], c["approve_over"], c["spent"]) for c in caps] == [
        ("agent:agent", 3.0, False, 0.0),
        ("label:team=red", 2.0, True, 0.0),
    ]
    table = run_ratchet("budget", "list", "--store", url)
    assert table.returncode == 0, table.stderr
    assert "label:team=red" in table.stdout and "waits for approval" in table.stdout

    done = run_ratchet("budget", "delete", "--label", "team=red", "--store", url)
    assert done.returncode == 0, done.stderr
    assert [c["cap"] for c in listed(run_ratchet, url)] == ["agent:agent"]
    again = run_ratchet("budget", "delete", "--label", "team=red", "--store", url)
    assert_one_line_error(again, "no spend cap label:team=red")


def test_bad_input_is_one_line_and_stores_nothing(url: str, run_ratchet: RunRatchet) -> None:
    for args, expected in [
        (["--daily", "1"], "give --agent NAME or --label KEY=VALUE"),
        (["--daily", "1", "--agent", "a", "--label", "k=v"], "one of them"),
        (["--daily", "0", "--agent", "a"], "more than 0"),
        (["--daily", "nan", "--agent", "a"], "more than 0"),
        (["--daily", "1", "--label", "team"], "not KEY=VALUE"),
    ]:
        assert_one_line_error(run_ratchet("budget", "set", *args, "--store", url), expected)
    assert listed(run_ratchet, url) == []


def test_a_worker_holds_a_task_at_its_agent_s_cap_until_a_person_approves_going_over(
    url: str, run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.3}
    script = {
        "plan": [{**plan("answer"), "usage": usage}],
        "act": [{**say("done"), "usage": usage}],
        "verify": [{**verdict(True), "usage": usage}],
    }
    (tmp_path / "priced.json").write_text(json.dumps(script))
    done = run_ratchet(
        "budget", "set", "--agent", "agent", "--daily", "0.5", "--approve-over", "--store", url
    )
    assert done.returncode == 0, done.stderr
    submitted = run_ratchet("submit", "do it", "--model", "scripted:priced.json", "--json", "--store", url)
    assert submitted.returncode == 0, submitted.stderr
    task_id = json.loads(submitted.stdout)["task_id"]

    worked = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)
    assert worked.returncode == 0, worked.stderr
    task = stored_task(url, task_id)
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
    assert [c["spent"] for c in listed(run_ratchet, url)] == [0.6]  # plan and act; verify waits

    approved = run_ratchet("approve", task_id, "--store", url)
    assert approved.returncode == 0, approved.stderr
    worked = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)
    assert worked.returncode == 0, worked.stderr

    assert stored_task(url, task_id).status is TaskStatus.COMPLETED
    [cap] = listed(run_ratchet, url)
    assert round(cap["spent"], 6) == 0.9 and cap["reached"]

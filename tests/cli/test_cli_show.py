"""`ratchet show`, run as a real program."""

from __future__ import annotations

import json

from ..helpers.cli import PopulatedStore, RunRatchet
from .task_support import as_task


def test_show_prints_the_task_its_steps_and_latest_events(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.running
    done = run_ratchet("show", task.id, "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    out = done.stdout
    for text in (task.id, task.name, "running", task.instruction, "service deployed"):
        assert text in out
    for step, status in (("build image", "completed"), ("roll out", "current"), ("smoke test", "pending")):
        line = next(line for line in out.splitlines() if step in line)
        assert status in line
    # the last ten of fifteen events, display_message preferred over message
    assert "progress 15" in out
    assert "raw message 14" in out
    assert "progress 5" not in out
    assert "raw message 4" not in out
    assert "Waiting for approval" not in out


def test_show_lists_the_operations_waiting_for_approval(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.waiting
    done = run_ratchet("show", task.id, "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert "waiting(approval)" in done.stdout
    assert "Waiting for approval" in done.stdout
    assert "send_email" in done.stdout
    assert "ops@example.com" in done.stdout


def test_show_prints_the_result_of_a_completed_task(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    done = run_ratchet("show", populated_store.tasks.completed.id, "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout
    assert '{"healthy": true}' in done.stdout


def test_show_json_is_one_object_with_every_part(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.running
    done = run_ratchet("show", task.id, "--json", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert set(shown) == {
        "task",
        "steps",
        "events",
        "pending_approvals",
        "question",
        "in_doubt",
        "pending_messages",
        "children",
        "checkpoints",
        "spend",
        "next",
        "decided_approval",
        "wakes_at",
        "forked",
    }
    assert shown["pending_messages"] == []
    assert (shown["next"], shown["decided_approval"], shown["wakes_at"]) == (None, None, None)  # it runs
    assert shown["forked"] is None  # not a fork
    assert as_task(shown["task"]) == task
    assert [(s["step"], s["name"], s["status"]) for s in shown["steps"]] == [
        (1, "build image", "completed"),
        (2, "roll out", "current"),
        (3, "smoke test", "pending"),
    ]
    assert [event["seq"] for event in shown["events"]] == list(range(6, 16))
    assert shown["events"][-1]["severity"] == "warning"
    assert shown["pending_approvals"] == []


def test_show_json_of_a_task_waiting_for_approval(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.waiting
    done = run_ratchet("show", task.id, "--json", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["task"]["waiting_on"] == "approval"
    assert shown["steps"] == []
    [approval] = shown["pending_approvals"]
    assert (approval["seq"], approval["tool"], approval["status"]) == (0, "send_email", "pending")
    assert approval["arguments"] == {"to": "ops@example.com"}
    assert [event["message"] for event in shown["events"]] == ["send_email needs approval"]

"""Rows that cannot be read, through `ratchet`: listed as unreadable, `show` says what is wrong, and a
worker sets the task aside with an event and completes every other task."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ratchet.records import TaskStatus, utcnow

from ..helpers.cli import RunRatchet, assert_one_line_error
from ..helpers.raw_sql import change_task_record, run_sql
from .task_support import FLOWS, run_here, stored_task, submit, with_store

PROBLEM = "state.known_facts: Input should be a valid array"


def _break_facts(record: dict[str, Any]) -> None:
    record["state"]["known_facts"] = 5


def _mend_facts(record: dict[str, Any]) -> None:
    record["state"]["known_facts"] = []


def test_a_task_that_cannot_be_read_is_listed_by_its_columns_and_as_unreadable_in_json(
    run_ratchet: RunRatchet, url: str
) -> None:
    """The table reads only the columns it shows (they are sound); --json reads the records."""
    ids = [submit(url, "greet", who=who) for who in ("ann", "bob", "cy")]
    change_task_record(url, ids[1], _break_facts)

    table = run_ratchet("tasks", "--store", url)
    listed = run_ratchet("tasks", "--json", "--store", url)

    assert table.returncode == 0, table.stderr
    [row] = [line for line in table.stdout.splitlines() if ids[1] in line]
    assert "queued" in row and "greet" in row
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [entry["task_id"] for entry in entries] == [ids[0], ids[2], ids[1]]
    assert entries[-1] == {"task_id": ids[1], "unreadable": PROBLEM}
    assert [entry["status"] for entry in entries[:2]] == ["queued", "queued"]


def test_show_says_what_is_wrong_and_events_still_lists_the_tasks_events(
    run_ratchet: RunRatchet, url: str
) -> None:
    task_id = submit(url, "greet", who="ann")
    change_task_record(url, task_id, _break_facts)

    shown = run_ratchet("show", task_id, "--store", url)
    events = run_ratchet("events", task_id, "--json", "--store", url)

    assert_one_line_error(shown, f"task {task_id} is unreadable: {PROBLEM}")
    assert events.returncode == 0, events.stderr
    assert [json.loads(line)["kind"] for line in events.stdout.splitlines()] == ["task_created"]


def test_an_event_row_that_cannot_be_read_is_shown_in_its_place(run_ratchet: RunRatchet, url: str) -> None:
    task = run_here(url, "greet", who="ann")
    run_sql(url, "UPDATE events SET data = '{oops' WHERE task_id = ? AND seq = 2", task.id)

    printed = run_ratchet("events", task.id, "--store", url)
    streamed = run_ratchet("events", task.id, "--json", "--store", url)
    shown = run_ratchet("show", task.id, "--json", "--store", url)

    assert printed.returncode == 0, printed.stderr
    [line] = [line for line in printed.stdout.splitlines() if line.split()[0] == "2"]
    assert f"event 2 of task {task.id} is unreadable: data: not JSON" in line
    assert streamed.returncode == 0, streamed.stderr
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert lines[1]["unreadable"].startswith("data: not JSON")
    assert set(lines[1]) == {"task_id", "seq", "unreadable"}
    assert shown.returncode == 0, shown.stderr
    assert lines[1] in json.loads(shown.stdout)["events"]


@pytest.mark.parametrize("found_as", ["queued", "orphaned"])
def test_a_worker_sets_an_unreadable_task_aside_and_completes_every_other_task(
    run_ratchet: RunRatchet, url: str, found_as: str
) -> None:
    ids = [submit(url, "greet", who=who) for who in ("ann", "bob", "cy", "di")]
    bad = ids[1]
    change_task_record(url, bad, _break_facts)
    if found_as == "orphaned":  # no start triggers: the workers' search for orphaned tasks finds them
        run_sql(url, "DELETE FROM triggers")
    work = ("worker", "--until-idle", "--poll", "0.05", "--workflows", str(FLOWS), "--store", url)

    done = run_ratchet(*work)  # within the runner's time limit

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for task_id in ids:
        if task_id != bad:
            assert stored_task(url, task_id).status is TaskStatus.COMPLETED
    [logged] = [line for line in done.stderr.splitlines() if f"task {bad}: set aside" in line]
    assert PROBLEM in logged
    events = with_store(url, lambda store: store.list_events(bad))
    assert events[-1].kind == "task_unreadable"
    assert PROBLEM in events[-1].message
    [recheck] = with_store(url, lambda store: store.list_triggers(bad))
    assert recheck.kind == "recheck"
    assert recheck.fire_at > utcnow()
    claims = with_store(url, lambda store: store.lease_history(bad))

    again = run_ratchet(*work)

    assert again.returncode == 0, again.stderr
    assert with_store(url, lambda store: store.lease_history(bad)) == claims  # not taken again
    assert with_store(url, lambda store: store.list_events(bad)) == events

    change_task_record(url, bad, _mend_facts)
    resumed = run_ratchet("resume", bad, "--store", url)

    assert resumed.returncode == 0, resumed.stderr
    assert with_store(url, lambda store: store.get_task(bad)).status is TaskStatus.COMPLETED
    assert with_store(url, lambda store: store.list_triggers(bad)) == []


def test_a_worker_drops_a_due_trigger_it_cannot_read_and_still_runs_its_task(
    run_ratchet: RunRatchet, url: str
) -> None:
    ids = [submit(url, "greet", who=who) for who in ("ann", "bob")]
    run_sql(url, "UPDATE triggers SET payload = 'nope' WHERE task_id = ?", ids[0])

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    [dropped] = [line for line in done.stderr.splitlines() if "it was taken off the queue" in line]
    assert "payload: not JSON" in dropped
    for task_id in ids:  # the one whose start was dropped is found as an orphan
        assert stored_task(url, task_id).status is TaskStatus.COMPLETED

"""What every command prints, in every form: the same JSON key for the same thing, times with
their UTC offset, steps counted from 1, task ids kept whole on a narrow terminal."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from ratchet.records import Event, Session, Task
from ratchet.store import open_store

from ..helpers.cli import PopulatedStore, RunRatchet, ratchet_env, table_cells

# Every time --json prints: ISO 8601, in UTC, with its offset.
WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")
# What a time printed without its offset, or with a bare Z, would look like.
WITHOUT_OFFSET = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?$")
TIME_KEYS = {
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "deadline",
    "time",
    "requested_at",
    "decided_at",
    "next_attempt_at",
    "starts_at",
    "next_due",
}
HELPERS = Path(__file__).resolve().parents[1] / "helpers"
LONG_IDS = ["deploy-service-3f2a1b0c", "deploy-service-3f2a1b0c-fork2-9e8d7c"]


def times_in(value: Any) -> list[str]:
    """Every time in a JSON value, checked to be one: under a time key, or looking like one."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TIME_KEYS and item is not None:
                found.append(item)
            found += times_in(item)
    elif isinstance(value, list):
        for item in value:
            found += times_in(item)
    elif isinstance(value, str):
        assert not WITHOUT_OFFSET.match(value), f"a time without its UTC offset: {value!r}"
    return found


def assert_times_have_offsets(value: Any) -> None:
    times = times_in(value)
    assert times, "no time at all"
    for time in times:
        assert WITH_OFFSET.match(time), time


async def _add(
    url: str, *events: Event, sessions: tuple[Session, ...] = (), tasks: tuple[Task, ...] = ()
) -> None:
    store = await open_store(url)
    try:
        for event in events:
            await store.append_event(event)
        for session in sessions:
            await store.put_session(session)
        for task in tasks:
            await store.create_task(task)
    finally:
        await store.close()


# --------------------------------------------------------------------------- JSON


def test_every_record_names_its_task_task_id_and_gives_times_with_their_offset(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    url, tasks = populated_store.url, populated_store.tasks

    listed = json.loads(run_ratchet("tasks", "--json", "--store", url).stdout)
    shown = json.loads(run_ratchet("show", tasks.waiting.id, "--json", "--store", url).stdout)
    running = json.loads(run_ratchet("show", tasks.running.id, "--json", "--store", url).stdout)
    events = [
        json.loads(line)
        for line in run_ratchet("events", tasks.running.id, "--json", "--store", url).stdout.splitlines()
    ]

    assert [row["task_id"] for row in listed] == [task.id for task in tasks.all]
    assert all("id" not in row for row in listed)
    assert listed[0]["created_at"] == "2025-01-02T09:00:00+00:00"
    assert shown["task"]["task_id"] == tasks.waiting.id and "id" not in shown["task"]
    assert [approval["task_id"] for approval in shown["pending_approvals"]] == [tasks.waiting.id]
    assert {step["task_id"] for step in running["steps"]} == {tasks.running.id}
    assert {event["task_id"] for event in events} == {tasks.running.id}
    assert events[0]["time"] == "2025-01-02T09:00:01+00:00"
    for printed in (listed, shown, running, events):
        assert_times_have_offsets(printed)


def test_sessions_and_schedules_name_their_ids_as_such(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    submitted = run_ratchet(
        "submit",
        "record it",
        "--model",
        f"scripted:{HELPERS / 'failover_script.json'}",
        "--tools",
        str(HELPERS / "failover_tools.py"),
        "--every",
        "0 9 * * *",
        "--json",
        "--store",
        url,
    )
    assert submitted.returncode == 0, submitted.stderr
    asyncio.run(_add(url, sessions=(Session(id="garden"),)))

    [schedule] = json.loads(run_ratchet("schedules", "--json", "--store", url).stdout)
    [session] = json.loads(run_ratchet("sessions", "--json", "--store", url).stdout)

    assert set(json.loads(submitted.stdout)) == {"schedule_id", "next_due"}
    assert schedule["schedule_id"] == json.loads(submitted.stdout)["schedule_id"]
    assert schedule["next_due"].endswith("T09:00:00+00:00")
    assert session["session_id"] == "garden"
    for printed in (json.loads(submitted.stdout), schedule, session):
        assert_times_have_offsets(printed)


# --------------------------------------------------------------------------- steps


def test_steps_are_numbered_from_1_in_show_and_in_json(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.running

    shown = run_ratchet("show", task.id, "--store", populated_store.url).stdout
    as_json = json.loads(run_ratchet("show", task.id, "--json", "--store", populated_store.url).stdout)

    for number, name in ((1, "build image"), (2, "roll out"), (3, "smoke test")):
        [row] = [line for line in shown.splitlines() if name in line]
        assert table_cells(row)[0] == str(number)
    assert [step["step"] for step in as_json["steps"]] == [1, 2, 3]
    assert all("index" not in step for step in as_json["steps"])


def test_events_name_steps_as_people_count_them(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.running
    asyncio.run(
        _add(
            populated_store.url,
            # As the agent and the engine record them: a step's index, from 0.
            Event(task_id=task.id, kind="step_started", message="step 2: roll out", data={"index": 1}),
            Event(
                task_id=task.id,
                kind="waiting",
                message="send_email waits for a person",
                data={"reason": "approval", "seq": 3, "tool": "send_email", "step": 1},
            ),
        )
    )

    lines = run_ratchet("events", task.id, "--json", "--store", populated_store.url).stdout.splitlines()

    started, waiting = (json.loads(line) for line in lines[-2:])
    assert started["data"] == {"step": 2}
    assert waiting["data"] == {"reason": "approval", "seq": 3, "tool": "send_email", "step": 2}


# --------------------------------------------------------------------------- narrow terminals


def test_task_ids_stay_whole_on_a_narrow_terminal(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    asyncio.run(
        _add(
            url,
            tasks=tuple(
                Task(
                    id=task_id, name="deploy service-x to staging", instruction="deploy it", agent="ops-agent"
                )
                for task_id in LONG_IDS
            ),
        )
    )
    narrow = ratchet_env(COLUMNS="60")

    listed = run_ratchet("tasks", "--store", url, env=narrow)
    shown = run_ratchet("show", LONG_IDS[1], "--store", url, env=narrow)

    assert listed.returncode == 0 and shown.returncode == 0, listed.stderr + shown.stderr
    assert max(len(line) for line in listed.stdout.splitlines()) <= 60  # the others gave way
    # Each id fills one cell of the id column: none was folded onto a second line.
    header, rule, *rows = listed.stdout.splitlines()
    assert header.startswith("id ") and set(rule) == {"─"}
    assert [table_cells(row)[0] for row in rows if not row.startswith(" ")] == LONG_IDS
    assert LONG_IDS[1] in shown.stdout

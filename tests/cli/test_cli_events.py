"""`ratchet events` and `ratchet events --follow`, run as a real program."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

from ratchet.records import Event, Severity, Task, TaskStatus
from ratchet.store import open_store

from ..helpers.cli import LineReader, PopulatedStore, RunRatchet, ratchet_command, ratchet_env

FOLLOW_TIMEOUT = 30.0


def test_events_prints_every_event_in_order(run_ratchet: RunRatchet, populated_store: PopulatedStore) -> None:
    done = run_ratchet("events", populated_store.tasks.running.id, "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 15
    for number, line in enumerate(lines, start=1):
        assert line.split()[0] == str(number)
        shown = f"progress {number}" if number % 2 else f"raw message {number}"
        assert line.endswith(shown)
    assert "warning" in lines[-1]
    assert "info" in lines[0]


def test_events_json_prints_one_object_per_line(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    task = populated_store.tasks.running
    done = run_ratchet("events", task.id, "--json", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    events = [Event.model_validate(json.loads(line)) for line in done.stdout.splitlines()]
    assert [event.seq for event in events] == list(range(1, 16))
    assert {event.task_id for event in events} == {task.id}
    assert events[0].message == "raw message 1"


def test_events_of_a_task_without_events_prints_nothing(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    done = run_ratchet("events", populated_store.tasks.queued.id, "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_follow_on_an_ended_task_prints_its_events_and_returns(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    done = run_ratchet(
        "events", populated_store.tasks.completed.id, "--follow", "--store", populated_store.url
    )

    assert done.returncode == 0, done.stderr


async def _append_event(url: str, task_id: str, message: str) -> None:
    store = await open_store(url)
    try:
        await store.append_event(Event(task_id=task_id, kind="progress", message=message))
    finally:
        await store.close()


async def _complete(url: str, task: Task) -> None:
    store = await open_store(url)
    try:
        async with store.transaction() as tx:
            stored = await tx.get_task(task.id)
            await tx.update_task(stored.transition(TaskStatus.COMPLETED, result="deployed"))
            await tx.append_event(
                Event(task_id=task.id, kind="task", severity=Severity.INFO, message="all done")
            )
    finally:
        await store.close()


def _start_follower(
    populated_store: PopulatedStore, task: Task, cwd: Path, *extra: str
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ratchet_command("events", task.id, "--follow", *extra, "--store", populated_store.url),
        cwd=cwd,
        env=ratchet_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_follow_prints_new_events_until_the_task_completes(
    populated_store: PopulatedStore, tmp_path: Path
) -> None:
    task = populated_store.tasks.running
    follower = _start_follower(populated_store, task, tmp_path)
    assert follower.stdout is not None and follower.stderr is not None
    try:
        output = LineReader(follower.stdout)
        output.wait_for("progress 15", FOLLOW_TIMEOUT)

        asyncio.run(_append_event(populated_store.url, task.id, "halfway there"))
        output.wait_for("halfway there", FOLLOW_TIMEOUT)
        assert follower.poll() is None, "a follower of a running task must keep following"

        asyncio.run(_complete(populated_store.url, task))
        returncode = follower.wait(timeout=FOLLOW_TIMEOUT)
        lines = output.rest(FOLLOW_TIMEOUT)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    stderr = follower.stderr.read()

    assert returncode == 0, stderr
    assert stderr == ""
    assert len(lines) == 17
    assert lines[-2].rstrip().endswith("halfway there")
    assert lines[-1].rstrip().endswith("all done")
    assert [int(line.split()[0]) for line in lines] == list(range(1, 18))


def test_follow_json_prints_each_new_event_as_one_object(
    populated_store: PopulatedStore, tmp_path: Path
) -> None:
    task = populated_store.tasks.running
    follower = _start_follower(populated_store, task, tmp_path, "--json")
    assert follower.stdout is not None
    try:
        output = LineReader(follower.stdout)
        output.wait_for('"seq": 15', FOLLOW_TIMEOUT)
        asyncio.run(_complete(populated_store.url, task))
        returncode = follower.wait(timeout=FOLLOW_TIMEOUT)
        lines = output.rest(FOLLOW_TIMEOUT)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()

    assert returncode == 0
    events = [Event.model_validate_json(line) for line in lines]
    assert [event.seq for event in events] == list(range(1, 17))
    assert events[-1].message == "all done"


def test_ctrl_c_stops_following_quietly(populated_store: PopulatedStore, tmp_path: Path) -> None:
    task = populated_store.tasks.running
    follower = _start_follower(populated_store, task, tmp_path)
    assert follower.stdout is not None and follower.stderr is not None
    try:
        output = LineReader(follower.stdout)
        output.wait_for("progress 15", FOLLOW_TIMEOUT)
        follower.send_signal(signal.SIGINT)
        returncode = follower.wait(timeout=FOLLOW_TIMEOUT)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    stderr = follower.stderr.read()

    assert returncode == 0, stderr
    assert "Traceback" not in stderr
    assert stderr.strip() == ""

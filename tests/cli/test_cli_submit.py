"""`ratchet submit` and `ratchet schedules`, run as real programs; a worker runs what was submitted."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from ratchet.cli.submit import parse_start_time
from ratchet.errors import InputError
from ratchet.records import TaskStatus, utcnow

from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_env
from .task_support import with_store

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
SCRIPT = HELPERS / "failover_script.json"
TOOLS = HELPERS / "failover_tools.py"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return ratchet_env(RATCHET_FAILOVER_LEDGER=str(tmp_path / "ledger.db"))


def _submit(run_ratchet: RunRatchet, url: str, *extra: str) -> dict[str, str]:
    done = run_ratchet(
        "submit",
        "record build and ship",
        "--model",
        f"scripted:{SCRIPT}",
        "--tools",
        str(TOOLS),
        "--json",
        *extra,
        "--store",
        url,
    )
    assert done.returncode == 0, done.stderr
    submitted: dict[str, str] = json.loads(done.stdout)
    return submitted


def test_submit_queues_a_task_that_a_worker_runs(
    run_ratchet: RunRatchet, url: str, env: dict[str, str]
) -> None:
    submitted = _submit(run_ratchet, url)
    task = with_store(url, lambda store: store.get_task(submitted["task_id"]))
    assert task.status is TaskStatus.QUEUED and task.instruction == "record build and ship"

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url, env=env)

    assert done.returncode == 0, done.stderr
    task = with_store(url, lambda store: store.get_task(submitted["task_id"]))
    assert task.status is TaskStatus.COMPLETED, task.error


def test_submit_prints_the_id_alone_on_stdout(run_ratchet: RunRatchet, url: str) -> None:
    done = run_ratchet(
        "submit", "record it", "--model", f"scripted:{SCRIPT}", "--tools", str(TOOLS), "--store", url
    )
    assert done.returncode == 0, done.stderr
    [task_id] = done.stdout.split()
    assert "ratchet worker" in done.stderr
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.QUEUED


def test_a_task_submitted_for_later_is_left_until_then(
    run_ratchet: RunRatchet, url: str, env: dict[str, str]
) -> None:
    submitted = _submit(run_ratchet, url, "--at", "1h")
    starts = dt.datetime.fromisoformat(submitted["starts_at"])
    assert dt.timedelta(minutes=59) < starts - utcnow() <= dt.timedelta(hours=1)

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url, env=env)

    assert done.returncode == 0, done.stderr
    assert with_store(url, lambda store: store.get_task(submitted["task_id"])).status is TaskStatus.QUEUED
    [trigger] = with_store(url, lambda store: store.list_triggers(submitted["task_id"]))
    assert trigger.fire_at == starts


def test_every_makes_a_schedule_that_can_be_listed_and_deleted(run_ratchet: RunRatchet, url: str) -> None:
    submitted = _submit(run_ratchet, url, "--every", "0 9 * * 1-5")
    schedule_id = submitted["schedule_id"]
    due = dt.datetime.fromisoformat(submitted["next_due"])
    assert due > utcnow() and (due.hour, due.minute, due.weekday() < 5) == (9, 0, True)

    listed = run_ratchet("schedules", "--json", "--store", url)
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["schedule_id"], row["every"], row["instruction"]) == (
        schedule_id,
        "0 9 * * 1-5",
        "record build and ship",
    )
    assert schedule_id in run_ratchet("schedules", "--store", url).stdout

    deleted = run_ratchet("schedules", "--delete", schedule_id, "--store", url)
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(run_ratchet("schedules", "--json", "--store", url).stdout) == []
    assert_one_line_error(run_ratchet("schedules", "--delete", schedule_id, "--store", url), schedule_id)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--every", "every monday"], "not a cron expression"),
        (["--every", "61 * * * *"], "not a cron expression"),
        (["--at", "tomorrow"], "--at: 'tomorrow' is neither a time"),
        (["--at", "1h", "--every", "* * * * *"], "--at or --every, not both"),
        (["--model", "nope"], "nope"),
        (["--tools", "missing.py"], "missing.py"),
        (["--priority", "10"], "--priority"),
        (["--priority", "-1"], "--priority"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(
    run_ratchet: RunRatchet, url: str, tmp_path: Path, options: list[str], expected: str
) -> None:
    database = tmp_path / "ratchet.db"
    run_ratchet("migrate", "--store", url)
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    args = ["submit", "record it", "--model", f"scripted:{SCRIPT}", "--tools", str(TOOLS), *options]
    assert_one_line_error(run_ratchet(*args, "--store", url), expected)
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_priority_is_kept_on_the_task_and_its_trigger_and_shown(run_ratchet: RunRatchet, url: str) -> None:
    urgent = _submit(run_ratchet, url, "--priority", "0")["task_id"]
    plain = _submit(run_ratchet, url)["task_id"]
    shown = json.loads(run_ratchet("show", urgent, "--json", "--store", url).stdout)
    assert shown["task"]["priority"] == 0
    assert "priority" in run_ratchet("show", plain, "--store", url).stdout
    triggers = with_store(url, lambda store: store.list_triggers())
    assert {(t.task_id, t.priority) for t in triggers} == {(urgent, 0), (plain, 5)}


def test_submit_to_a_memory_store_is_refused(run_ratchet: RunRatchet) -> None:
    done = run_ratchet("submit", "x", "--model", f"scripted:{SCRIPT}", "--store", "memory://")
    assert_one_line_error(done, "memory://")


def test_start_times() -> None:
    now = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    assert parse_start_time("10m", now=now) == now + dt.timedelta(minutes=10)
    assert parse_start_time("2026-02-01T09:00:00", now=now) == dt.datetime(2026, 2, 1, 9, tzinfo=dt.UTC)
    assert parse_start_time("2026-02-01T10:00:00+01:00", now=now) == dt.datetime(2026, 2, 1, 9, tzinfo=dt.UTC)
    with pytest.raises(InputError):
        parse_start_time("soon", now=now)


def test_submit_again_with_its_task_id_queues_nothing_more(
    run_ratchet: RunRatchet, url: str, env: dict[str, str]
) -> None:
    first = _submit(run_ratchet, url, "--task-id", "release-1")
    again = run_ratchet(
        "submit",
        "something else",
        "--model",
        f"scripted:{SCRIPT}",
        "--tools",
        str(TOOLS),
        "--task-id",
        "release-1",
        "--store",
        url,
    )

    assert first["task_id"] == "release-1"
    assert again.returncode == 0, again.stderr
    assert again.stdout == "release-1\n"
    assert again.stderr.startswith("task release-1 exists already (queued): nothing new is queued")
    tasks = with_store(url, lambda store: store.list_tasks())
    assert [(t.id, t.instruction) for t in tasks] == [("release-1", "record build and ship")]
    assert len(with_store(url, lambda store: store.list_triggers("release-1"))) == 1


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--task-id", "a\tb"], "--task-id 'a\\tb': give printable text"),
        (["--task-id", " "], "give printable text"),
        (["--task-id", "r-1", "--every", "@daily"], "--task-id names one task"),
    ],
)
def test_a_task_id_that_cannot_name_a_task_is_refused_in_one_line(
    run_ratchet: RunRatchet, url: str, extra: list[str], expected: str
) -> None:
    done = run_ratchet(
        "submit", "x", "--model", f"scripted:{SCRIPT}", "--tools", str(TOOLS), *extra, "--store", url
    )

    assert_one_line_error(done, expected)
    assert not Path(url.removeprefix("sqlite:///")).exists()

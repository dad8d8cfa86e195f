"""`ratchet submit --every --tz --overlap`, `ratchet schedules --pause/--resume/--trigger`: real runs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ratchet.records import TaskStatus, utcnow

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import with_store
from .test_cli_submit import SCRIPT, TOOLS, _submit


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def _listed(run_ratchet: RunRatchet, url: str) -> dict[str, dict[str, object]]:
    done = run_ratchet("schedules", "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    return {row["schedule_id"]: row for row in json.loads(done.stdout)}


def test_tz_macro_and_overlap_are_kept_and_listed(run_ratchet: RunRatchet, url: str) -> None:
    paris = _submit(run_ratchet, url, "--every", "0 9 * * *", "--tz", "Europe/Paris", "--overlap", "allow")
    daily = _submit(run_ratchet, url, "--every", "@daily")

    due = dt.datetime.fromisoformat(paris["next_due"]).astimezone(ZoneInfo("Europe/Paris"))
    assert (due.hour, due.minute) == (9, 0)
    rows = _listed(run_ratchet, url)
    row = rows[paris["schedule_id"]]
    assert (row["every"], row["tz"], row["overlap"], row["paused"], row["last_task"]) == (
        "0 9 * * *",
        "Europe/Paris",
        "allow",
        False,
        None,
    )
    assert row["next_due"] == paris["next_due"]
    midnight = rows[daily["schedule_id"]]
    assert (midnight["every"], midnight["tz"], midnight["overlap"]) == ("@daily", "UTC", "skip")
    assert str(midnight["next_due"]).endswith("T00:00:00+00:00")
    shown = run_ratchet("schedules", "--store", url).stdout
    assert "Europe/Paris" in shown and "@daily" in shown


def test_pause_resume_and_trigger(run_ratchet: RunRatchet, url: str) -> None:
    schedule_id = _submit(run_ratchet, url, "--every", "0 9 * * 1")["schedule_id"]
    first_due = _listed(run_ratchet, url)[schedule_id]["next_due"]

    paused = run_ratchet("schedules", "--pause", schedule_id, "--store", url)
    assert paused.returncode == 0, paused.stderr
    assert f"schedule {schedule_id} paused" in paused.stdout + paused.stderr
    row = _listed(run_ratchet, url)[schedule_id]
    assert (row["paused"], row["next_due"]) == (True, None)
    assert "paused" in run_ratchet("schedules", "--store", url).stdout

    triggered = run_ratchet("schedules", "--trigger", schedule_id, "--json", "--store", url)
    assert triggered.returncode == 0, triggered.stderr
    made = json.loads(triggered.stdout)
    assert made["schedule_id"] == schedule_id
    task = with_store(url, lambda store: store.get_task(made["task_id"]))
    assert task.status is TaskStatus.QUEUED and task.instruction == "record build and ship"

    resumed = run_ratchet("schedules", "--resume", schedule_id, "--json", "--store", url)
    assert resumed.returncode == 0, resumed.stderr
    row = json.loads(resumed.stdout)
    assert (row["paused"], row["next_due"], row["last_task"]) == (False, first_due, made["task_id"])
    assert dt.datetime.fromisoformat(str(row["next_due"])) > utcnow()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--every", "@daily", "--tz", "Mars/Olympus"], "'Mars/Olympus' is not a time zone"),
        (["--every", "@reboot"], "not a cron macro"),
        (["--every", "@daily", "--overlap", "queue"], "overlap 'queue'"),
        (["--tz", "Europe/Paris"], "--tz is for a schedule"),
        (["--overlap", "allow"], "--overlap is for a schedule"),
    ],
)
def test_bad_schedule_options_are_one_line(
    run_ratchet: RunRatchet, url: str, options: list[str], expected: str
) -> None:
    args = ["submit", "record it", "--model", f"scripted:{SCRIPT}", "--tools", str(TOOLS), *options]
    assert_one_line_error(run_ratchet(*args, "--store", url), expected)


@pytest.mark.parametrize("flag", ["--pause", "--resume", "--trigger", "--delete"])
def test_acting_on_an_unknown_schedule_is_one_line(run_ratchet: RunRatchet, url: str, flag: str) -> None:
    run_ratchet("migrate", "--store", url)
    assert_one_line_error(run_ratchet("schedules", flag, "nope", "--store", url), "no schedule 'nope'")


def test_one_action_at_a_time(run_ratchet: RunRatchet, url: str) -> None:
    done = run_ratchet("schedules", "--pause", "a", "--trigger", "a", "--store", url)
    assert_one_line_error(done, "give one of --pause, --trigger at a time")

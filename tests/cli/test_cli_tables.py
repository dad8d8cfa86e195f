"""The CLI's tables on an 80-column terminal: every word whole, times relative, exact times in --json.

Each listing runs as the real program at ``COLUMNS=80`` over records like the
ones people have (ids of a name and eight hex digits, child tasks listed as a
tree, a task waiting for approval), and each word a row holds must be found
whole in what it printed: a word folded onto two lines (``complet`` / ``ed``)
or cut (``complet…``) is not.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ratchet.cli.relative_time import relative_time
from ratchet.records import Session, Step, StepStatus, Task, TaskStatus, WaitReason, utcnow
from ratchet.store import open_store

from ..helpers.cli import RunRatchet, ratchet_env
from .test_cli_submit import _submit

AT_80 = ratchet_env(COLUMNS="80")
NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("moment", "shown"),
    [
        (NOW, "now"),
        (NOW - dt.timedelta(seconds=42), "42s ago"),
        (NOW - dt.timedelta(minutes=3, seconds=59), "3m ago"),
        (NOW - dt.timedelta(hours=5, minutes=59), "5h ago"),
        (NOW - dt.timedelta(days=29, hours=23), "29d ago"),
        (NOW + dt.timedelta(hours=2, minutes=1), "in 2h"),
        (NOW + dt.timedelta(seconds=5), "in 5s"),
        (None, "-"),
    ],
)
def test_a_relative_time_counts_the_largest_whole_unit(moment: dt.datetime | None, shown: str) -> None:
    assert relative_time(moment, NOW) == shown


def test_a_time_a_month_away_or_more_is_its_date() -> None:
    long_ago = NOW - dt.timedelta(days=30)

    assert relative_time(long_ago, NOW) == long_ago.astimezone().strftime("%Y-%m-%d")
    assert relative_time(NOW + dt.timedelta(days=45), NOW) == "2027-01-13"


def _tasks(now: dt.datetime) -> list[Task]:
    """Tasks as `ratchet run`, `submit` and a team's children name them, created three minutes ago."""
    at = now - dt.timedelta(minutes=3, seconds=10)

    def task(task_id: str, name: str, agent: str, **fields: Any) -> Task:
        return Task(
            id=task_id,
            name=name,
            instruction=f"{name}, please",
            agent=agent,
            created_at=at,
            updated_at=at,
            **fields,
        )

    return [
        task("nightly-report-3f2a9c1d", "nightly report", "ops-agent", status=TaskStatus.COMPLETED),
        task(
            "agent-9e8d7c6b", "agent", "ops-agent", status=TaskStatus.WAITING, waiting_on=WaitReason.APPROVAL
        ),
        task("deploy-web-5a6b7c8d", "deploy web to staging", "deployer", status=TaskStatus.FAILED),
        task("team-c8bb5d39", "team", "team", status=TaskStatus.RUNNING),
        task(
            "team-c8bb5d39.1",
            "code tokens",
            "coder",
            status=TaskStatus.CANCELLED,
            parent_id="team-c8bb5d39",
        ),
        task("team-c8bb5d39.10", "fix cli", "coder", status=TaskStatus.QUEUED, parent_id="team-c8bb5d39"),
    ]


async def _store(url: str, tasks: list[Task], *sessions: Session) -> None:
    store = await open_store(url)
    try:
        for task in tasks:
            await store.create_task(task)
        if any(task.id == "team-c8bb5d39" for task in tasks):
            await store.replace_steps(
                "team-c8bb5d39",
                [
                    Step(
                        task_id="team-c8bb5d39", index=0, name="plan", status=StepStatus.COMPLETED, attempts=1
                    ),
                    Step(
                        task_id="team-c8bb5d39",
                        index=1,
                        name="write code",
                        status=StepStatus.CURRENT,
                        attempts=2,
                    ),
                ],
            )
        for session in sessions:
            await store.put_session(session)
    finally:
        await store.close()


def _assert_whole_at_80(printed: str, words: list[str]) -> None:
    assert printed.strip(), "nothing printed"
    assert max(len(line) for line in printed.splitlines()) <= 80
    assert "…" not in printed
    for word in words:
        assert word in printed, f"{word!r} is not whole in:\n{printed}"


def test_tasks_keep_every_word_whole_at_80_columns_flat_and_as_a_tree(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    tasks = _tasks(utcnow())
    asyncio.run(_store(url, tasks))

    for args in ((), ("--tree",)):
        done = run_ratchet("tasks", *args, "--store", url, env=AT_80)

        assert done.returncode == 0, done.stderr
        words = [
            word for task in tasks for word in (task.id, task.status_text, task.agent, *task.name.split())
        ]
        _assert_whole_at_80(done.stdout, [*words, "3m ago"])
        assert not re.search(r"\d{4}-\d\d-\d\d", done.stdout)  # no absolute time in the table


def test_on_a_crowded_row_the_name_wraps_and_the_agent_is_cut_never_the_status(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    [waiting] = [task for task in _tasks(utcnow()) if task.status is TaskStatus.WAITING]
    crowded = waiting.model_copy(update={"name": "weekly billing report", "agent": "accounts_payable_clerk"})
    asyncio.run(_store(url, [crowded]))

    done = run_ratchet("tasks", "--store", url, env=AT_80)

    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    for word in (crowded.id, "waiting(approval)", "weekly", "billing", "report"):
        assert word in done.stdout, done.stdout
    assert "accounts_payable_clerk" not in done.stdout and re.search(r" accounts_\w*…", done.stdout)


def test_tasks_json_keeps_the_exact_times(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    tasks = _tasks(utcnow())
    asyncio.run(_store(url, tasks))

    listed = json.loads(run_ratchet("tasks", "--json", "--store", url).stdout)

    assert [row["created_at"] for row in listed] == [task.created_at.isoformat() for task in tasks]


def test_show_gives_a_tasks_times_exact_and_relative_and_its_steps_whole_at_80_columns(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    tasks = _tasks(utcnow())
    asyncio.run(_store(url, tasks))

    shown = run_ratchet("show", "team-c8bb5d39", "--store", url, env=AT_80)

    assert shown.returncode == 0, shown.stderr
    created = tasks[3].created_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert f"{created} (3m ago)" in shown.stdout
    steps = shown.stdout[shown.stdout.index("Steps") :]
    _assert_whole_at_80(steps.split("Children")[0], ["plan", "completed", "write code", "current"])


def test_sessions_and_schedules_keep_every_word_whole_at_80_columns(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    asyncio.run(_store(url, [], Session(id="garden-notes-2026", state={"tasks": [], "turns": 3})))
    weekly = _submit(run_ratchet, url, "--every", "0 9 * * 1", "--tz", "Europe/Paris", "--overlap", "allow")

    sessions = run_ratchet("sessions", "--store", url, env=AT_80)
    schedules = run_ratchet("schedules", "--store", url, env=AT_80)

    assert sessions.returncode == 0 and schedules.returncode == 0, sessions.stderr + schedules.stderr
    _assert_whole_at_80(sessions.stdout, ["garden-notes-2026"])
    assert re.search(r"  (now|\d+s ago)  ", sessions.stdout), sessions.stdout
    _assert_whole_at_80(schedules.stdout, [weekly["schedule_id"], "0 9 * * 1", "Europe/Paris", "allow"])
    assert re.search(r"  in \d+(m|h|d)  ", schedules.stdout), schedules.stdout

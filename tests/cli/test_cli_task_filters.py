"""`ratchet tasks` narrowed and paged: --limit (and how many more), --name, --agent, --since/--until,
repeated --status and --desc, each checked on a real store through the real program."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import pytest

from ratchet.records import TaskStatus, WaitReason, utcnow
from ratchet.store import open_store

from ..helpers.builders import make_task
from ..helpers.cli import RunRatchet, assert_one_line_error

NOW = utcnow().replace(microsecond=0)
# id, name, agent, status, created hours ago
TASKS = [
    ("t1", "build", "alpha", TaskStatus.COMPLETED, 50),
    ("t2", "deploy", "alpha", TaskStatus.FAILED, 30),
    ("t3", "build", "beta", TaskStatus.WAITING, 20),
    ("t4", "report", "beta", TaskStatus.QUEUED, 3),
    ("t5", "build", "alpha", TaskStatus.CANCELLED, 1),
]


async def _fill(url: str) -> None:
    async with await open_store(url) as store:
        for task_id, name, agent, status, hours in TASKS:
            at = NOW - dt.timedelta(hours=hours)
            waits = WaitReason.APPROVAL if status is TaskStatus.WAITING else None
            task = make_task(task_id, name=name, agent=agent, status=status, waiting_on=waits, created_at=at)
            await store.create_task(task)


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'listed.db'}"
    asyncio.run(_fill(url))
    return url


def _listed(run_ratchet: RunRatchet, url: str, *args: str) -> list[str]:
    done = run_ratchet("tasks", "--json", "--store", url, *args)
    assert done.returncode == 0, done.stderr
    return [entry["task_id"] for entry in json.loads(done.stdout)]


def _table_ids(stdout: str) -> list[str]:
    return [
        word
        for line in stdout.splitlines()
        for word in line.split()
        if word in dict.fromkeys(t[0] for t in TASKS)
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), ["t1", "t2", "t3", "t4", "t5"]),
        (("--desc",), ["t5", "t4", "t3", "t2", "t1"]),
        (("--name", "build"), ["t1", "t3", "t5"]),
        (("--agent", "beta"), ["t3", "t4"]),
        (("--name", "build", "--agent", "alpha", "--desc"), ["t5", "t1"]),
        (("--status", "failed", "--status", "cancelled"), ["t2", "t5"]),
        (("--since", "24h"), ["t3", "t4", "t5"]),
        (("--until", "2h", "--since", "1d"), ["t3", "t4"]),
        (("--since", (NOW - dt.timedelta(hours=4)).isoformat()), ["t4", "t5"]),
        (("--limit", "2"), ["t1", "t2"]),
        (("--limit", "2", "--desc"), ["t5", "t4"]),
        (("--limit", "0"), ["t1", "t2", "t3", "t4", "t5"]),
    ],
)
def test_each_filter_narrows_the_json_listing(
    run_ratchet: RunRatchet, store_url: str, args: tuple[str, ...], expected: list[str]
) -> None:
    assert _listed(run_ratchet, store_url, *args) == expected


def test_the_table_says_how_many_more_there_are(run_ratchet: RunRatchet, store_url: str) -> None:
    done = run_ratchet("tasks", "--limit", "2", "--desc", "--store", store_url)

    assert done.returncode == 0, done.stderr
    assert _table_ids(done.stdout) == ["t5", "t4"]
    assert "3 more (of 5)" in done.stdout
    assert "waiting" not in done.stdout


def test_json_keeps_its_list_and_says_how_many_more_on_stderr(
    run_ratchet: RunRatchet, store_url: str
) -> None:
    done = run_ratchet("tasks", "--json", "--limit", "1", "--store", store_url)

    assert done.returncode == 0, done.stderr
    assert [entry["task_id"] for entry in json.loads(done.stdout)] == ["t1"]
    assert (
        done.stderr.strip() == "4 more; raise --limit (0 for all), page with --offset or narrow the filters"
    )


def test_a_filter_matching_nothing_says_so(run_ratchet: RunRatchet, store_url: str) -> None:
    done = run_ratchet("tasks", "--name", "nobody", "--store", store_url)

    assert done.returncode == 0, done.stderr
    assert "No tasks match those filters" in done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--status", "done"), "unknown status 'done'"),
        (("--since", "yesterday"), "--since: 'yesterday' is neither a time"),
        (("--until", "5x"), "--until: '5x' is neither a time"),
        (("--since", "1h", "--until", "2h"), "must be before --until"),
        (("--name", " "), "--name needs a value"),
        (("--limit", "-1"), "--limit"),
        (("--limit", "many"), "--limit"),
        (("--limit", str(2**31)), "--limit"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    run_ratchet: RunRatchet, store_url: str, args: tuple[str, ...], expected: str
) -> None:
    assert_one_line_error(run_ratchet("tasks", "--store", store_url, *args), expected)

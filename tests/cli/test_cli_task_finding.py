"""`ratchet tasks` finds tasks: --search, --label, --waiting-on, --model, --parent, --id-prefix, the cost
range, --sort, --offset and --count, through the real program on a real store; a bad filter (hostile
ones too) is one line and exit 2; `run`/`submit --label` label the task and `show` lists its labels."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from ratchet.records import TaskStatus, WaitReason, utcnow
from ratchet.store import open_store

from ..helpers.builders import make_task
from ..helpers.cli import RunRatchet, assert_one_line_error
from .run_support import TOOLS, acts, script

NOW = utcnow().replace(microsecond=0)
SPECS: list[dict[str, Any]] = [
    {"name": "invoice march", "labels": {"team": "billing", "env": "prod"}, "cost": 0.5},
    {"name": "invoice april", "labels": {"team": "billing", "env": "dev"}, "cost": 2.0},
    {"name": "backup", "labels": {"team": "ops"}, "model": "openai:gpt-4o-mini"},
    {"name": "refund", "status": TaskStatus.COMPLETED, "result": "Refunded to the card", "cost": 1.0},
    {"name": "child", "parent_id": "f0", "status": TaskStatus.WAITING, "waiting_on": WaitReason.INPUT},
    {"name": "zeta", "instruction": "publish the post-mortem", "cost": 3.0},
]


async def _fill(url: str) -> None:
    async with await open_store(url) as store:
        for i, fields in enumerate(SPECS):
            at = NOW - dt.timedelta(hours=len(SPECS) - i)
            await store.create_task(make_task(f"f{i}", created_at=at, updated_at=at, **fields))


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('finding') / 'found.db'}"
    asyncio.run(_fill(url))
    return url


def _listed(run_ratchet: RunRatchet, url: str, *args: str) -> list[str]:
    done = run_ratchet("tasks", "--json", "--store", url, *args)
    assert done.returncode == 0, done.stderr
    return [entry["task_id"] for entry in json.loads(done.stdout)]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--search", "invoice"), ["f0", "f1"]),
        (("-s", "INVOICE mar"), ["f0"]),
        (("--search", "refunded card"), ["f3"]),
        (("--search", "post mortem"), ["f5"]),
        (("--search", "'; DROP TABLE tasks; --"), []),
        (("--search", 'NEAR("invoice" *'), []),
        (("--label", "team=billing"), ["f0", "f1"]),
        (("--label", "team=billing", "--label", "env=dev"), ["f1"]),
        (("--label", "team=billing", "--search", "march"), ["f0"]),
        (("--waiting-on", "input"), ["f4"]),
        (("--waiting-on", "approval"), []),
        (("--model", "openai:gpt-4o-mini"), ["f2"]),
        (("--parent", "f0"), ["f4"]),
        (("--id-prefix", "f3"), ["f3"]),
        (("--id-prefix", "F"), []),
        (("--min-cost", "1"), ["f1", "f3", "f5"]),
        (("--min-cost", "0.5", "--max-cost", "2"), ["f0", "f1", "f3"]),
        (("--sort", "cost", "--desc"), ["f5", "f1", "f3", "f0", "f4", "f2"]),
        (("--sort", "-cost", "--limit", "2"), ["f5", "f1"]),
        (("--sort", "name"), ["f2", "f4", "f1", "f0", "f3", "f5"]),
        (("--offset", "4"), ["f4", "f5"]),
        (("--desc", "--offset", "1", "--limit", "2"), ["f4", "f3"]),
    ],
)
def test_each_filter_narrows_the_listing(
    run_ratchet: RunRatchet, store_url: str, args: tuple[str, ...], expected: list[str]
) -> None:
    assert _listed(run_ratchet, store_url, *args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [((), "6"), (("--label", "team=billing"), "2"), (("--search", "nothing-like-it"), "0")],
)
def test_count_prints_only_how_many_match(
    run_ratchet: RunRatchet, store_url: str, args: tuple[str, ...], expected: str
) -> None:
    done = run_ratchet("tasks", "--count", "--store", store_url, *args)
    as_json = run_ratchet("tasks", "--count", "--json", "--store", store_url, *args)

    assert (done.returncode, done.stdout, done.stderr) == (0, expected + "\n", "")
    assert json.loads(as_json.stdout) == {"count": int(expected)}


def test_the_table_says_where_the_next_page_starts(run_ratchet: RunRatchet, store_url: str) -> None:
    done = run_ratchet("tasks", "--limit", "2", "--offset", "1", "--store", store_url)

    assert done.returncode == 0, done.stderr
    assert "3 more (of 6)" in done.stdout and "--offset 3" in done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--search", "*"), "--search: '*' has no word to search for"),
        (("--search", "x" * 1001), "--search is 1001 characters, more than the limit of 1000"),
        (("--label", "team"), "--label: 'team' is not KEY=VALUE; e.g. --label team=ops"),
        (("--label", "team="), "--label: the label team has no value"),
        (("--label", "a b=c"), "--label: the key 'a b' is not a label key"),
        (("--label", "x=1", "--label", "x=2"), "--label: 'x' is given twice"),
        (("--waiting-on", "godot"), "--waiting-on: 'godot' is nothing a task waits on"),
        (("--status", "sleeping"), "--status: unknown status 'sleeping'"),
        (("--model", " "), "--model needs a value"),
        (("--parent", "p" * 513), "--parent is 513 characters"),
        (("--id-prefix", ""), "--id-prefix needs a value"),
        (("--min-cost", "cheap"), "--min-cost: 'cheap' is not an amount of US dollars"),
        (("--max-cost", "inf"), "--max-cost: 'inf' is not an amount"),
        (("--min-cost", "2", "--max-cost", "1"), "--min-cost (2.0) is more than --max-cost (1.0)"),
        (("--sort", "size"), "--sort: 'size' is no column to sort by"),
        (("--offset", "-1"), "--offset"),
        (("--count", "--since", "yesterday"), "--since: 'yesterday' is neither a time"),
    ],
)
def test_a_bad_filter_is_one_line_and_exit_2(
    run_ratchet: RunRatchet, store_url: str, args: tuple[str, ...], expected: str
) -> None:
    assert_one_line_error(run_ratchet("tasks", "--store", store_url, *args), expected)


@pytest.mark.parametrize("command", ["run", "submit"])
def test_run_and_submit_label_their_tasks_and_show_lists_the_labels(
    run_ratchet: RunRatchet, tmp_path: Path, command: str
) -> None:
    url = f"sqlite:///{tmp_path / 'labelled.db'}"
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=[*acts("a"), *acts("b")])
    labels = ("--label", "team=ops", "--label", "tier=1")
    made = run_ratchet(
        command, "Keep the ledger", "--model", model, "--tools", "tools.py", *labels, "--store", url
    )
    assert made.returncode == 0, made.stderr

    [task_id] = _listed(run_ratchet, url, "--label", "tier=1", "--label", "team=ops")
    shown = run_ratchet("show", task_id, "--store", url)
    record = json.loads(run_ratchet("show", task_id, "--json", "--store", url).stdout)["task"]

    assert "labels" in shown.stdout and "team=ops tier=1" in shown.stdout
    assert (record["name"], record["labels"]) == ("Keep the ledger", {"team": "ops", "tier": "1"})


@pytest.mark.parametrize("command", ["run", "submit"])
@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("team", "--label: 'team' is not KEY=VALUE"),
        ("9=x", "--label: the key '9' is not a label key"),
        ("team=" + "v" * 257, "--label: the value of team is 257 characters"),
    ],
)
def test_a_bad_label_is_one_line_and_stores_nothing(
    run_ratchet: RunRatchet, tmp_path: Path, command: str, label: str, expected: str
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    model = script(tmp_path, act=acts("a"))

    assert_one_line_error(
        run_ratchet(command, "go", "--model", model, "--label", label, "--store", url), expected
    )
    assert not (tmp_path / "ratchet.db").exists()

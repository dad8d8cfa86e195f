"""`ratchet run --name`, `ratchet submit --name`: the task's name, as `ratchet tasks` lists and matches it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratchet.limits import MAX_NAME_CHARS

from ..helpers.cli import RunRatchet, assert_one_line_error
from .run_support import TOOLS, acts, script


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def _listed(run_ratchet: RunRatchet, url: str, *extra: str) -> list[tuple[str, str]]:
    done = run_ratchet("tasks", "--json", *extra, "--store", url)
    assert done.returncode == 0, done.stderr
    return [(task["task_id"], task["name"]) for task in json.loads(done.stdout)]


def test_run_and_submit_name_their_tasks_and_tasks_lists_and_matches_the_names(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=[*acts("a"), *acts("b")], steps=("a", "b"))
    model_args = ["--model", model, "--tools", "tools.py"]
    ran = run_ratchet(
        "run", "keep the ledger", *model_args, "--name", "nightly report", "--json", "--store", url
    )
    assert ran.returncode == 0, ran.stderr
    queued = run_ratchet("submit", "keep the ledger", *model_args, "--name", "backfill", "--store", url)
    assert queued.returncode == 0, queued.stderr
    unnamed = run_ratchet("submit", "keep the ledger", *model_args, "--store", url)
    assert unnamed.returncode == 0, unnamed.stderr
    ran_id = json.loads(ran.stdout.splitlines()[-1])["task_id"]

    # Without --name, a task is named by the start of its instruction.
    assert [name for _, name in _listed(run_ratchet, url)] == [
        "nightly report",
        "backfill",
        "keep the ledger",
    ]
    assert _listed(run_ratchet, url, "--name", "nightly report") == [(ran_id, "nightly report")]
    assert [name for _, name in _listed(run_ratchet, url, "--name", "backfill")] == ["backfill"]


@pytest.mark.parametrize("command", ["run", "submit"])
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("", "--name needs a name"),
        ("   ", "--name needs a name"),
        ("n" * (MAX_NAME_CHARS + 1), f"--name is {MAX_NAME_CHARS + 1} characters, more than the limit of"),
    ],
)
def test_a_blank_or_overlong_name_is_one_line_of_bad_input_and_stores_nothing(
    run_ratchet: RunRatchet, url: str, tmp_path: Path, command: str, name: str, expected: str
) -> None:
    model = script(tmp_path, act=acts("a"))

    done = run_ratchet(command, "keep the ledger", "--model", model, "--name", name, "--store", url)

    assert_one_line_error(done, expected)
    assert not (tmp_path / "ratchet.db").exists()


def test_a_name_of_the_longest_length_is_taken(run_ratchet: RunRatchet, url: str, tmp_path: Path) -> None:
    longest = "n" * MAX_NAME_CHARS
    done = run_ratchet(
        "submit", "go", "--model", script(tmp_path, act=acts("a")), "--name", longest, "--store", url
    )

    assert done.returncode == 0, done.stderr
    assert [name for _, name in _listed(run_ratchet, url)] == [longest]

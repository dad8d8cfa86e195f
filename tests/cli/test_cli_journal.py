"""`ratchet journal TASK`: a task's calls in seq order, with the run that recorded each (replayed or
live), the calls in doubt and each retried call's earlier attempts; and `ratchet show`'s checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ratchet
from ratchet.cli.journal import journal_duration

from ..engine.flows import FLOWS as ENGINE_FLOWS
from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_env
from .task_support import leave_send_email_in_flight, run_here, with_store
from .test_cli_demo import run_demo


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def _journal(run_ratchet: RunRatchet, url: str, task_id: str, *args: str) -> list[dict[str, Any]]:
    done = run_ratchet("journal", task_id, "--json", "--store", url, *args)
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, Any]] = json.loads(done.stdout)
    return entries


def test_a_retried_call_shows_each_earlier_attempt(run_ratchet: RunRatchet, url: str, tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.jsonl")

    async def run(store: ratchet.StateStore) -> str:
        task = await ratchet.Runtime(store).run(
            f"{ENGINE_FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"}
        )
        return task.id

    task_id = with_store(url, run)

    [call] = [entry for entry in _journal(run_ratchet, url, task_id) if entry["name"] == "flaky"]
    table = run_ratchet("journal", task_id, "--store", url)

    assert (call["seq"], call["kind"], call["attempt"], call["status"]) == (0, "tool", 3, "succeeded")
    assert call["retried"] is True and call["in_doubt"] is False
    assert [a["attempt"] for a in call["earlier_attempts"]] == [1, 2]
    assert all(a["started_at"] <= a["failed_at"] for a in call["earlier_attempts"])
    assert "attempt 1 failed" in call["earlier_attempts"][0]["error"]
    assert call["idempotency_key"] == f"{task_id}:0" and call["duration_seconds"] >= 0
    assert "input" not in call and call["input_preview"] is not None
    assert table.returncode == 0, table.stderr
    assert table.stdout.count("failed, retried") == 2
    assert f"{task_id}:0" in table.stdout


def test_a_call_in_doubt_is_marked_and_the_way_to_settle_it_is_shown(
    run_ratchet: RunRatchet, url: str
) -> None:
    task_id = leave_send_email_in_flight(url)

    [call] = _journal(run_ratchet, url, task_id)
    table = run_ratchet("journal", task_id, "--store", url)

    assert (call["name"], call["status"], call["in_doubt"], call["run"]) == ("send_email", "started", True, 1)
    assert call["replayed"] is False  # no run came after the one that recorded it
    assert "in doubt" in table.stdout
    assert f"ratchet resolve --store {url} {task_id} --op SEQ" in table.stdout


def test_calls_recorded_by_an_earlier_run_are_marked_replayed(run_ratchet: RunRatchet, url: str) -> None:
    task_id = leave_send_email_in_flight(url)
    assert run_ratchet("resume", task_id, "--store", url).returncode == 3  # run 2 stops on it
    assert run_ratchet("resolve", task_id, "--op", "0", "--skip", "--store", url).returncode == 0
    assert run_ratchet("resume", task_id, "--store", url).returncode == 0  # run 3

    entries = _journal(run_ratchet, url, task_id)

    first = entries[0]
    assert (first["name"], first["run"], first["replayed"], first["in_doubt"]) == (
        "send_email",
        1,
        True,
        False,
    )
    table = run_ratchet("journal", task_id, "--store", url)
    assert "1 replayed" in table.stdout and "3 runs" in table.stdout


def test_full_shows_whole_inputs_and_outputs(run_ratchet: RunRatchet, url: str) -> None:
    task_id = leave_send_email_in_flight(url, to="x" * 300 + "@example.com")

    [short] = _journal(run_ratchet, url, task_id)
    [full] = _journal(run_ratchet, url, task_id, "--full")
    table = run_ratchet("journal", task_id, "--full", "--store", url)

    assert short["input_preview"].endswith("…") and "input" not in short
    assert full["input"]["to"] == "x" * 300 + "@example.com"
    assert "x" * 300 in table.stdout.replace("│", "").replace("\n", "").replace(" ", "")


def test_an_unknown_task_is_one_line_and_exit_2(run_ratchet: RunRatchet, url: str) -> None:
    run_here(url, "greet", who="ann")

    assert_one_line_error(run_ratchet("journal", "nobody", "--store", url), "nobody")
    assert_one_line_error(run_ratchet("journal", "nobody", "--json", "--store", url), "nobody")


def test_show_lists_the_checkpoints_and_how_to_fork_from_one(run_ratchet: RunRatchet, url: str) -> None:
    task = run_here(url, "three_steps")

    shown = run_ratchet("show", task.id, "--store", url)
    as_json = run_ratchet("show", task.id, "--json", "--store", url)

    assert shown.returncode == 0, shown.stderr
    saved = json.loads(as_json.stdout)["checkpoints"]
    assert saved and [c["checkpoint"] for c in saved] == list(range(1, len(saved) + 1))
    assert f"Checkpoints ({len(saved)}" in shown.stdout
    assert f"ratchet fork --store {url} {task.id} --checkpoint N" in shown.stdout


def test_the_demos_journal_shows_what_the_resume_replayed_and_ran_again(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/demo.db"
    done = run_demo(tmp_path, "--store", url)
    assert done.returncode == 0, done.stdout + done.stderr

    [task_id] = [row.id for row in with_store(url, lambda store: store.list_task_rows())]
    entries = _journal(run_ratchet, url, task_id)
    table = run_ratchet("journal", task_id, "--store", url, env=ratchet_env(COLUMNS="300"))

    assert sum(entry["replayed"] for entry in entries) == 15  # as the demo's own report counts them
    [apply] = [entry for entry in entries if entry["name"] == "apply_manifest"]
    assert (apply["was_in_doubt"], apply["run"], apply["replayed"], apply["attempt"]) == (
        "run again",
        2,
        False,
        2,
    )
    assert "was in doubt: run again" in table.stdout


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, "-"), (0.0, "0 µs"), (5.3e-05, "53 µs"), (0.000296, "296 µs"), (0.304, "304 ms"),
     (1.5, "1.5 s"), (125.4, "2 min 5 s")],
)  # fmt: skip
def test_durations_read_at_a_glance(seconds: float | None, shown: str) -> None:
    assert journal_duration(seconds) == shown


def test_at_80_columns_the_journal_keeps_its_words_whole_and_says_what_it_left_out(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.jsonl")

    async def run(store: ratchet.StateStore) -> str:
        task = await ratchet.Runtime(store).run(
            f"{ENGINE_FLOWS}:first_call", {"ledger": ledger, "tool_name": "flaky"}
        )
        return task.id

    task_id = with_store(url, run)

    narrow = run_ratchet("journal", task_id, "--store", url, env=ratchet_env(COLUMNS="80"))
    wide = run_ratchet("journal", task_id, "--store", url, env=ratchet_env(COLUMNS="160"))

    assert narrow.returncode == 0 and wide.returncode == 0, narrow.stderr + wide.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()[1:]) <= 80  # the headline names the task
    header = narrow.stdout.splitlines()[1]
    assert header.split() == ["seq", "name", "status", "run", "took", "input", "output", "/", "error"]
    for word in ("flaky", "succeeded", "1 live", "attempt", "failed,", "retried"):
        assert word in narrow.stdout, narrow.stdout
    assert "Left out below 130 columns: kind, attempt, start, idempotency key (see --json)." in narrow.stdout
    assert "idempotency key" in wide.stdout.splitlines()[1] and f"{task_id}:0" in wide.stdout

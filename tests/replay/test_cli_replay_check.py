"""`ratchet replay-check` as a program: the code installed is the module file as it stands when it runs.

Runs are recorded into a SQLite file or a PostgreSQL database; then the
module is rewritten (two calls swapped, then the swap behind
``ctx.patched``) and each check is a fresh ``ratchet`` process, which
loads the module as it is on disk, as CI would after a change.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..cli.run_support import TOOLS, acts, script
from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env, table_cells
from .orders import every_row, ledger, record_runs, write_orders


def replay_check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ratchet_command("replay-check", *args),
        cwd=cwd,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def recorded(url: str, tmp_path: Path) -> Path:
    """The module the runs were recorded with (its directory holds their ledger)."""
    module = write_orders(tmp_path)
    asyncio.run(record_runs(url, module))
    return module


def checked(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_a_change_fails_the_check_naming_the_seq_and_patched_fixes_it(
    url: str, recorded: Path, tmp_path: Path
) -> None:
    allow = ("--allow-code", str(tmp_path))
    calls, rows = ledger(tmp_path), every_row(url)

    as_recorded = replay_check(tmp_path, "--store", url, *allow)
    write_orders(tmp_path, "reordered")
    reordered = replay_check(tmp_path, "--store", url, "--json", "--all", *allow)
    write_orders(tmp_path, "patched")
    patched = replay_check(tmp_path, "--store", url, "--json", "--all", *allow)

    assert as_recorded.returncode == 0, as_recorded.stderr
    lines = as_recorded.stdout.splitlines()
    unended = ("asking-1", "asking-2", "queued")
    shown = {cells[0]: cells[1:3] for cells in map(table_cells, lines) if cells[0] in unended}
    assert shown == {"asking-1": ["4", "replays"], "asking-2": ["4", "replays"], "queued": ["0", "replays"]}
    assert lines[-1] == "3 checked: 3 replay, 0 diverge, 0 cannot be checked."

    assert reordered.returncode == 1, reordered.stderr
    document = checked(reordered)
    counts = (document["ok"], document["checked"], document["replays"], document["diverges"])
    assert counts == (False, 5, 1, 4)
    diverging = {task["task_id"]: task for task in document["tasks"] if task["verdict"] == "diverges"}
    assert sorted(diverging) == ["asking-1", "asking-2", "done-1", "done-2"]
    for task in diverging.values():
        assert task["replayed"] == 1
        assert task["problem"] is None
        divergence = task["divergence"]
        assert (divergence["seq"], divergence["recorded"], divergence["requested"]) == (
            1,
            "tool charge",
            "tool ship",
        )
        assert 'ctx.patched("<change-id>")' in divergence["fix"]

    assert patched.returncode == 0, patched.stderr
    assert checked(patched)["replays"] == 5
    assert ledger(tmp_path) == calls  # no tool ran in any of the three
    assert every_row(url) == rows  # and nothing was written


def test_the_table_names_the_divergence_and_its_fix(url: str, recorded: Path, tmp_path: Path) -> None:
    write_orders(tmp_path, "reordered")

    done = replay_check(tmp_path, "asking-1", "--store", url, "--allow-code", str(tmp_path))

    assert done.returncode == 1
    text = " ".join(done.stdout.split())
    assert "asking-1 1 diverges 1: tool charge -> tool ship" in text
    assert 'ctx.patched("<change-id>")' in text
    assert text.endswith("1 checked: 0 replay, 1 diverge, 0 cannot be checked.")


def test_code_the_checker_may_not_load_is_reported_not_run(url: str, recorded: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    done = replay_check(elsewhere, "--store", url, "--json")

    assert done.returncode == 1
    document = checked(done)
    assert document["unchecked"] == 3
    assert all("orders.py" in task["problem"] for task in document["tasks"])


def test_an_agent_task_replays(url: str, tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=[*acts("a"), *acts("b")])
    ran = subprocess.run(
        ratchet_command("run", "keep the ledger", "--model", model, "--tools", "tools.py", "--store", url),
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    queued = subprocess.run(
        ratchet_command("submit", "keep it again", "--model", model, "--tools", "tools.py", "--store", url),
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert queued.returncode == 0, queued.stderr
    calls = (tmp_path / "calls.jsonl").read_text()
    # No check asks the model: not a replay (it reads the journal), and not the queued task's first
    # call (the frontier), which would fail here, its script gone.
    (tmp_path / "script.json").unlink()

    done = replay_check(tmp_path, "--store", url, "--json", "--all")

    assert done.returncode == 0, done.stdout + done.stderr
    ran_task, queued_task = checked(done)["tasks"]
    assert ran_task["verdict"] == queued_task["verdict"] == "replays"
    assert ran_task["replayed"] >= 6  # plan, then per step: act (a tool call, a report) and verify
    assert queued_task["replayed"] == 0
    assert (tmp_path / "calls.jsonl").read_text() == calls


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    asyncio.run(record_runs(url, write_orders(tmp_path)))

    assert_one_line_error(replay_check(tmp_path, "--status", "done", "--store", url), "--status", "done")
    assert_one_line_error(replay_check(tmp_path, "--waiting-on", "godot", "--store", url), "--waiting-on")
    assert_one_line_error(replay_check(tmp_path, "nope", "--store", url), "nope")
    assert_one_line_error(replay_check(tmp_path, "--json", "--store", "nosuch://x"), "nosuch")
    assert_one_line_error(
        replay_check(tmp_path, "done-1", "--name", "checkout", "--store", url), "task ids or filters"
    )
    assert_one_line_error(replay_check(tmp_path, "--allow-code", "", "--store", url))

"""``--log-level`` on the long-running commands: what each level lets through to stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..cli.task_support import FLOWS, submit
from ..helpers.cli import ratchet_runner


def worker_log(tmp_path: Path, *level: str) -> str:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    submit(url, "greet", who="ann")
    done = ratchet_runner(tmp_path)(
        "worker", "--until-idle", "--poll", "0.05", "--workflows", str(FLOWS), "--store", url, *level
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_worker_logs_tasks_at_info_by_default(tmp_path: Path) -> None:
    stderr = worker_log(tmp_path)
    assert " INFO ratchet.worker: task " in stderr and "completed" in stderr
    assert "DEBUG" not in stderr


def test_warning_keeps_the_worker_quiet(tmp_path: Path) -> None:
    assert worker_log(tmp_path, "--log-level", "warning") == ""


def test_debug_shows_each_live_call(tmp_path: Path) -> None:
    stderr = worker_log(tmp_path, "--log-level", "DEBUG")
    assert (
        "DEBUG ratchet.calls: task " in stderr
        and "tool call 0 (shout) succeeded after 1 attempt(s)" in stderr
    )


def test_resume_takes_the_level_too(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    task_id = submit(url, "greet", who="bob")
    run = ratchet_runner(tmp_path)
    done = run("resume", task_id, "--store", url, "--log-level", "debug")
    assert done.returncode == 0, done.stderr
    assert f"task {task_id}: tool call 0 (shout) succeeded" in done.stderr


@pytest.mark.parametrize("command", ["worker", "run", "resume", "mcp"])
def test_every_long_running_command_refuses_an_unknown_level(tmp_path: Path, command: str) -> None:
    done = ratchet_runner(tmp_path)(
        command, "--log-level", "loud", *(["x"] if command in ("run", "resume") else [])
    )
    assert done.returncode == 2
    assert "--log-level" in done.stderr and "Traceback" not in done.stderr

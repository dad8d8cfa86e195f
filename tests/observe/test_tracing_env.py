"""Tracing turned on by the standard ``OTEL_*`` variables in a real ``ratchet`` process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ratchet.observe import trace_id_for

from ..cli.run_support import TOOLS, acts, script
from ..cli.task_support import submit
from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env


def resume(tmp_path: Path, **env: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    task_id = submit(url, "greet", who="ann")
    done = subprocess.run(
        ratchet_command("resume", task_id, "--store", url),
        cwd=tmp_path,
        env=ratchet_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return task_id, done


def test_otel_traces_exporter_console_prints_the_task_spans_on_stderr(tmp_path: Path) -> None:
    task_id, done = resume(tmp_path, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="shop")
    assert done.returncode == 0, done.stderr
    trace_id = f'"trace_id": "0x{trace_id_for(task_id):032x}"'
    assert done.stderr.count(trace_id) >= 2  # the tool call and the task, in the task's trace
    assert '"name": "execute_tool shout"' in done.stderr
    assert '"service.name": "shop"' in done.stderr
    assert "trace_id" not in done.stdout  # stdout is the command's own output


def test_otel_sdk_disabled_wins(tmp_path: Path) -> None:
    _task_id, done = resume(tmp_path, OTEL_TRACES_EXPORTER="console", OTEL_SDK_DISABLED="true")
    assert done.returncode == 0, done.stderr
    assert "trace_id" not in done.stdout + done.stderr


def test_an_exporter_not_installed_is_one_line_error(tmp_path: Path) -> None:
    _task_id, done = resume(tmp_path, OTEL_TRACES_EXPORTER="zipkin-nowhere")
    assert_one_line_error(done, "OTEL_TRACES_EXPORTER names 'zipkin-nowhere', which is not installed")


def test_run_json_keeps_the_last_line_of_stdout_with_console_spans(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=acts("a"), steps=("a",))
    url = f"sqlite:///{tmp_path / 'r.db'}"
    done = subprocess.run(
        ratchet_command(
            "run", "keep the ledger", "-m", model, "--tools", "tools.py", "--json", "--store", url
        ),
        cwd=tmp_path,
        env=ratchet_env(OTEL_TRACES_EXPORTER="console"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["status"] == "completed"
    assert "trace_id" not in done.stdout
    trace_id = f'"trace_id": "0x{trace_id_for(outcome["task_id"]):032x}"'
    assert '"name": "invoke_agent agent"' in done.stderr and trace_id in done.stderr

"""What `ratchet run` shows on a terminal: the Live panel, drawn from what the store holds."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from rich.console import Console

from ratchet.cli.json_output import run_json
from ratchet.cli.progress import RunProgress, run_panel, usage_text
from ratchet.policy import Budget
from ratchet.records import Event, Operation, OpKind, OpStatus, Step, StepStatus, Task, TaskStatus

from ..helpers.cli import ratchet_command, ratchet_env
from .run_support import TOOLS, acts, read_terminal, script

ANSI_CODE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
T0 = dt.datetime(2025, 1, 2, 9, 0, tzinfo=dt.UTC)


def progress() -> RunProgress:
    task = Task(
        id="agent-1",
        name="agent",
        instruction="keep the ledger",
        status=TaskStatus.RUNNING,
        budget=Budget(max_steps=5, max_llm_tokens=10_000),
    )
    steps = [
        Step(task_id="agent-1", index=0, name="collect", status=StepStatus.COMPLETED, attempts=1),
        Step(task_id="agent-1", index=1, name="deploy", status=StepStatus.CURRENT, attempts=2),
        Step(task_id="agent-1", index=2, name="report"),
    ]

    def call(seq: int, status: OpStatus, **fields: Any) -> Operation:
        return Operation(
            task_id="agent-1",
            seq=seq,
            kind=OpKind.TOOL,
            name="record",
            idempotency_key=f"agent-1:{seq}",
            input={"entry": str(seq)},
            status=status,
            started_at=T0,
            **fields,
        )

    return RunProgress(
        task=task,
        steps=steps,
        tool_calls=[
            call(3, OpStatus.SUCCEEDED),
            call(7, OpStatus.FAILED, error="disk full", next_attempt_at=T0),
            call(9, OpStatus.STARTED),
        ],
        llm_tokens=1234,
        last_event=Event(task_id="agent-1", seq=12, kind="step_started", message="step 2: deploy"),
    )


def test_the_panel_shows_the_plan_the_tool_calls_and_the_budget() -> None:
    console = Console(width=120, record=True, color_system=None)

    console.print(run_panel(progress()))

    text = console.export_text()
    assert "agent (agent-1) running" in text
    assert "✓ 1. collect" in text
    assert "▶ 2. deploy  attempt 2" in text
    assert "· 3. report" in text
    assert "#3 record(entry='3') ok" in text
    assert "#7 record(entry='7') attempt 1 failed (disk full); retrying" in text
    assert "#9 record(entry='9') running..." in text
    assert "1,234 LLM tokens of 10,000 · 1 of 3 steps done (at most 5 may start) · 3 tool calls" in text
    assert "last: step 2: deploy" in text


def test_the_json_counts_completed_steps() -> None:
    shown = run_json(progress())

    assert shown["usage"] == {"llm_tokens": 1234, "cost": 0.0, "steps": 1}
    assert shown["steps"][1] == {"step": 2, "name": "deploy", "status": "current", "failure_message": None}
    assert "1 of 3 steps done" in usage_text(progress())


def test_the_usage_line_says_the_cost_against_max_cost() -> None:
    shown = progress()
    task = shown.task.model_copy(update={"budget": Budget(max_cost=0.5)})
    text = usage_text(dataclasses.replace(shown, task=task, cost=0.0125))

    assert text.startswith("1,234 LLM tokens · $0.0125 of $0.5 · 1 of 3 steps done")


def test_on_a_terminal_run_draws_a_live_panel(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=[*acts("a"), *acts("b")])
    leader, follower = os.openpty()
    process = subprocess.Popen(
        ratchet_command(
            "run",
            "keep the ledger",
            "-m",
            model,
            "--tools",
            "tools.py",
            "--store",
            f"sqlite:///{tmp_path / 'ratchet.db'}",
        ),
        cwd=tmp_path,
        env={**ratchet_env(), "TERM": "xterm", "COLUMNS": "120", "LINES": "40"},
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    screen = read_terminal(leader)
    _, err = process.communicate(timeout=30)

    assert process.returncode == 0, err
    assert "\x1b[" in screen  # drawn, not printed line by line
    plain = ANSI_CODE.sub("", screen)
    final = plain[plain.rindex("╭") :]
    assert "✓ 1. a" in final and "✓ 2. b" in final
    assert re.search(r"#\d+ record\(entry='b'\) ok", final)
    assert "2 of 2 steps done" in final
    assert 'result: "recorded b"' in final

"""The earlier steps' reports in a step's prompt: newest first, never past their byte budget."""

from __future__ import annotations

import pytest

from ratchet.agent.findings import Report, findings_text, long_report, plan_overview
from ratchet.records import Step, StepStatus


def _steps(count: int) -> list[Step]:
    return [
        Step(task_id="t", index=i, name=f"step {i + 1}", status=StepStatus.COMPLETED) for i in range(count)
    ]


@pytest.mark.parametrize("budget", [0, 60, 100, 250, 500, 1000, 4000])
@pytest.mark.parametrize("size", [1, 40, 120, 900])
def test_the_reports_never_pass_their_budget(budget: int, size: int) -> None:
    steps = _steps(12)
    text = "é" * size  # two bytes a character: the budget counts bytes
    kept = long_report(text, budget * 2)
    reports = {s.index: Report(text, f"t-report-{s.index + 1}" if kept else None) for s in steps}
    text = findings_text(steps, reports, budget)
    assert len(text.encode("utf-8")) <= budget
    shown = [int(line.split()[2]) for line in text.splitlines() if line.startswith("- step")]
    assert shown == list(range(12, 12 - len(shown), -1))  # the newest first, none skipped
    if text:
        assert text.startswith("What the earlier steps found (newest first):\n")


def test_reports_left_out_are_counted_and_the_newest_kept() -> None:
    steps = _steps(10)
    text = findings_text(steps, {s.index: Report(f"found {s.index + 1} " + "x" * 30) for s in steps}, 300)
    assert "- step 10 (step 10, completed): found 10" in text
    assert "- step 1 (" not in text
    assert "older reports left out for space)" in text


def test_the_overview_names_every_step_its_status_and_why_one_did_not_complete() -> None:
    steps = [
        Step(task_id="t", index=0, name="look", status=StepStatus.COMPLETED),
        Step(task_id="t", index=1, name="restart", status=StepStatus.FAILED, failure_message="X is down"),
        Step(task_id="t", index=2, name="roll back", status=StepStatus.CURRENT),
    ]
    overview = plan_overview(steps)
    assert overview == "1. look [completed]\n2. restart [failed]: X is down\n3. roll back [current]"

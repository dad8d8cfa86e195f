"""Where a retry starts, read from a task's steps and journal (`ratchet.runtime.fork.retry_point`)."""

from __future__ import annotations

from typing import Any

import pytest

from ratchet.agent import AGENT_WORKFLOW
from ratchet.errors import CannotRetry
from ratchet.records import Operation, OpStatus, Step, StepStatus, Task, TaskStatus
from ratchet.runtime.fork import RetryPoint, retry_point

from ..helpers.builders import make_op

DONE, FAILED, CANCELLED = StepStatus.COMPLETED, StepStatus.FAILED, StepStatus.CANCELLED


def _task(status: TaskStatus = TaskStatus.FAILED, workflow: str = AGENT_WORKFLOW) -> Task:
    return Task(id="t", name="t", instruction="", workflow=workflow, status=status, error="it failed")


def _steps(*statuses: StepStatus) -> list[Step]:
    return [Step(task_id="t", index=i, name=f"s{i}", status=s) for i, s in enumerate(statuses)]


def _journal(*steps: int | None, last: OpStatus = OpStatus.SUCCEEDED) -> list[Operation]:
    """One operation per entry, made in the step given (None: outside any step)."""
    meta: list[dict[str, Any]] = [{} if s is None else {"step": s} for s in steps]
    ops = [make_op("t", seq, OpStatus.SUCCEEDED, meta=m) for seq, m in enumerate(meta)]
    ops[-1] = make_op("t", len(ops) - 1, last, meta=meta[-1])
    return ops


def test_an_agent_starts_again_at_the_last_unbroken_run_of_its_failed_step() -> None:
    # plan, step 0, step 1, step 2 (its first try, a replan, the new step 2): one unbroken run.
    ops = _journal(None, 0, 0, 1, 1, 2, 2, 2, 2)
    assert retry_point(_task(), _steps(DONE, DONE, FAILED), ops, None) == RetryPoint(5, 2)
    assert retry_point(_task(), _steps(DONE, DONE, FAILED), ops, 2) == RetryPoint(3, 1)
    assert retry_point(_task(), _steps(DONE, DONE, FAILED), ops, 1) == RetryPoint(1, 0)


def test_a_step_that_made_no_operation_starts_where_the_journal_goes_on() -> None:
    ops = _journal(None, 0, 0)  # step 1 failed before its first call (a budget, say)
    assert retry_point(_task(), _steps(DONE, FAILED, CANCELLED), ops, None) == RetryPoint(3, 1)


def test_a_planning_failure_plans_again() -> None:
    assert retry_point(_task(), [], _journal(None, last=OpStatus.FAILED), None) == RetryPoint(0, None)
    # No valid plan after its repairs: a failed placeholder step; the retry asks for a plan again.
    assert retry_point(_task(), _steps(FAILED), _journal(None, None, None), None) == RetryPoint(0, 0)


def test_a_workflow_starts_at_its_call_that_failed_for_good_else_after_its_journal() -> None:
    workflow = _task(workflow="app.flows:ship")
    assert retry_point(workflow, _steps(DONE, FAILED), _journal(0, 1, 1, last=OpStatus.FAILED), None) == (
        RetryPoint(2, 1)
    )
    assert retry_point(workflow, _steps(DONE, FAILED), _journal(0, 1, 1), None) == RetryPoint(3, 1)


def test_a_cancelled_task_carries_on_where_it_was_stopped() -> None:
    ops = _journal(None, 0, 1, last=OpStatus.STARTED)
    assert retry_point(_task(TaskStatus.CANCELLED), _steps(DONE, CANCELLED), ops, None) == RetryPoint(3, 1)


def test_from_step_is_bounded_by_the_step_the_task_stopped_in() -> None:
    with pytest.raises(CannotRetry, match="give a step from 1 to 2"):
        retry_point(_task(), _steps(DONE, FAILED, CANCELLED), _journal(None, 0, 1), 3)
    with pytest.raises(CannotRetry, match="stopped before its first step"):
        retry_point(_task(), [], _journal(None), 1)


def test_a_journal_that_records_no_steps_points_at_fork() -> None:
    with pytest.raises(CannotRetry, match="ratchet fork t --checkpoint N"):
        retry_point(_task(), _steps(DONE, FAILED), _journal(None, None, None), None)

"""What ``--json`` prints: one shape per record, written in this module only.

Every command that prints a record builds its JSON here, so the same thing has
the same key in every command's output.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..model import Event, Task
from .progress import RunProgress
from .views import Outcome, TaskView

__all__ = [
    "event_json",
    "outcome_json",
    "print_event_line",
    "print_json",
    "print_json_line",
    "run_json",
    "task_json",
    "task_view_json",
]


def print_json(value: Any) -> None:
    """A listing or a record, indented, on stdout."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def print_json_line(value: Any) -> None:
    """One JSON object on one line of stdout (a run's outcome, an event of a stream)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def print_event_line(event: Event) -> None:
    """One event of `ratchet events --json`: one object per line."""
    sys.stdout.write(event.model_dump_json() + "\n")


def task_json(task: Task) -> dict[str, Any]:
    return task.model_dump(mode="json")


def event_json(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json")


def task_view_json(view: TaskView) -> dict[str, Any]:
    """What `ratchet show --json` prints."""
    return {
        "task": task_json(view.task),
        "steps": [step.model_dump(mode="json") for step in view.steps],
        "events": [event_json(event) for event in view.events],
        "pending_approvals": [a.model_dump(mode="json") for a in view.pending_approvals],
        "question": view.question,
        "in_doubt": [op.model_dump(mode="json") for op in view.in_doubt],
    }


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """How a run left its task: what `ratchet resume --json` prints."""
    task = outcome.task
    return {
        "task_id": task.id,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "result": task.result,
        "error": task.error,
    }


def run_json(progress: RunProgress) -> dict[str, Any]:
    """How `ratchet run` left its task, with its steps and what it used."""
    task = progress.task
    return {
        "task_id": task.id,
        "status": str(task.status),
        "result": task.result,
        "error": task.error,
        "steps": [{"name": step.name, "status": str(step.status)} for step in progress.steps],
        "usage": {"llm_tokens": progress.llm_tokens, "steps": progress.steps_done},
    }

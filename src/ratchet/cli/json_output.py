"""What ``--json`` prints: the shapes of the CLI's own outcomes, and the printing.

A record's own shape is `ratchet.views.record_json`'s, re-exported here; that
module owns the JSON key rules (``task_id``, never a bare ``id``; steps
numbered from 1 under ``step``; times ISO 8601 in UTC with their offset), and
the shapes built here (a run's outcome, a queued task) follow them.

Text stays exact, and safe on a terminal: JSON escapes the C0 controls, and
`printable_json` the C1 controls and the other characters a terminal acts on.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING, Any

from ..printable import printable_json
from ..records import Task
from ..views.record_json import (
    approval_json,
    checkpoint_json,
    event_json,
    iso_time,
    operation_json,
    schedule_json,
    session_json,
    step_json,
    step_number,
    stream_entry_json,
    task_json,
    task_view_json,
    unreadable_json,
)

if TYPE_CHECKING:  # the shapes of `run` and `resume`: `ratchet tasks --json` imports neither
    from .progress import RunProgress
    from .views import Outcome

__all__ = [
    "JsonList",
    "approval_json",
    "checkpoint_json",
    "event_json",
    "iso_time",
    "operation_json",
    "outcome_json",
    "print_json",
    "print_json_line",
    "queued_json",
    "run_json",
    "schedule_json",
    "scheduled_json",
    "session_json",
    "step_json",
    "stream_entry_json",
    "task_json",
    "task_view_json",
    "unreadable_json",
]


def print_json(value: Any) -> None:
    """A listing or a record, indented, on stdout."""
    sys.stdout.write(printable_json(value, indent=2) + "\n")


class JsonList:
    """A listing printed item by item, as the same text `print_json` prints for the whole list.

    For a listing as long as a store (`ratchet tasks --limit 0 --json`):
    what is printed is never held, and a reader gets the first items at once.
    """

    def __init__(self) -> None:
        self.count = 0

    def add(self, item: Any) -> None:
        """Print one item of the list."""
        # An item of an indented list is the item indented on its own, each line two spaces in
        # (JSON text holds no raw line break but those of the indentation).
        text = printable_json(item, indent=2).replace("\n", "\n  ")
        sys.stdout.write(("[\n  " if self.count == 0 else ",\n  ") + text)
        self.count += 1

    def flush(self) -> None:
        """Hand what was printed to the reader now (a pipe's buffer would hold it)."""
        sys.stdout.flush()

    def close(self) -> None:
        """End the list."""
        sys.stdout.write("\n]\n" if self.count else "[]\n")


def print_json_line(value: Any) -> None:
    """One JSON object on one line of stdout (a run's outcome, one event of a stream)."""
    sys.stdout.write(printable_json(value) + "\n")


# --------------------------------------------------------------------------- what commands did


def queued_json(task_id: str, starts_at: dt.datetime) -> dict[str, Any]:
    """What `ratchet submit --json` prints for a task: its id and when it may start."""
    return {"task_id": task_id, "starts_at": iso_time(starts_at)}


def scheduled_json(schedule_id: str, next_due: dt.datetime) -> dict[str, Any]:
    """What `ratchet submit --every --json` prints: the schedule's id and its first due time."""
    return {"schedule_id": schedule_id, "next_due": iso_time(next_due)}


def _how_it_was_left(task: Task) -> dict[str, Any]:
    return {
        "task_id": task.id,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "result": task.result,
        "error": task.error,
    }


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """How a run left its task: what `ratchet resume --json` prints."""
    return _how_it_was_left(outcome.task)


def run_json(progress: RunProgress) -> dict[str, Any]:
    """How `ratchet run` left its task, as `resume` says it, with its steps and what it used."""
    return {
        **_how_it_was_left(progress.task),
        "steps": [
            {
                "step": step_number(step.index),
                "name": step.name,
                "status": str(step.status),
                "failure_message": step.failure_message,
            }
            for step in progress.steps
        ],
        "usage": {"llm_tokens": progress.llm_tokens, "cost": progress.cost, "steps": progress.steps_done},
    }

"""What ``--json`` prints: one shape per record, built in this module only.

Every command that prints a record builds its JSON here, so one thing has one
key in every command's output:

- a task's id is ``task_id`` (a schedule's ``schedule_id``, a session's
  ``session_id``), never a bare ``id``;
- a step is numbered from 1, as people count, under the key ``step``: in a
  task's steps, in an approval, in the data of the events that name a step
  (the store keeps `Step.index` from 0; this is the one place that converts);
- every time is ISO 8601 in UTC with its offset, ``2025-01-02T09:00:00+00:00``.

Text stays exact, and safe on a terminal: JSON escapes the C0 controls, and
`printable_json` the C1 controls and the other characters a terminal acts on.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..errors import CorruptRecord
from ..model import Approval, Event, Operation, Session, Step, Task
from ..printable import printable_json
from ..schedules import Schedule
from .progress import RunProgress
from .views import Outcome, TaskView, in_seq_order

__all__ = [
    "approval_json",
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
    "task_json",
    "task_view_json",
    "unreadable_json",
]

# The agent's step events, and a retry's, keep the step's index (from 0) as data["index"].
_AGENT_STEP_EVENTS = frozenset(
    {
        "step_started",
        "step_completed",
        "step_retry",
        "step_skipped",
        "step_failed",
        "replanned",
        "task_completed_by_agent",
        "task_failed_by_agent",
        "task_retry",
        "retried",
    }
)


def print_json(value: Any) -> None:
    """A listing or a record, indented, on stdout."""
    sys.stdout.write(printable_json(value, indent=2) + "\n")


def print_json_line(value: Any) -> None:
    """One JSON object on one line of stdout (a run's outcome, one event of a stream)."""
    sys.stdout.write(printable_json(value) + "\n")


def iso_time(moment: dt.datetime | None) -> str | None:
    """A time as JSON carries it: ISO 8601, in UTC, with its offset (a naive time is taken as UTC)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat()


def _plain(value: Any) -> Any:
    """`value` with every time written by `iso_time` and every tuple as a list."""
    if isinstance(value, dt.datetime):
        return iso_time(value)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _fields(record: BaseModel) -> dict[str, Any]:
    return dict(_plain(record.model_dump(mode="python")))


def _step_number(index: Any) -> Any:
    """A step's number as people count it, from the index the store keeps (None stays None)."""
    return index + 1 if isinstance(index, int) and not isinstance(index, bool) else index


# --------------------------------------------------------------------------- records


def task_json(task: Task) -> dict[str, Any]:
    """A task record, its id as ``task_id``."""
    fields = _fields(task)
    return {"task_id": fields.pop("id"), **fields}


def step_json(step: Step) -> dict[str, Any]:
    """A step of a task's plan, numbered from 1 as ``step``."""
    fields = _fields(step)
    number = _step_number(fields.pop("index"))
    return {"task_id": fields.pop("task_id"), "step": number, **fields}


def approval_json(approval: Approval) -> dict[str, Any]:
    """A tool call waiting for (or given) a person's decision; ``step`` counts from 1."""
    fields = _fields(approval)
    fields["step"] = _step_number(fields["step"])
    return fields


def operation_json(op: Operation) -> dict[str, Any]:
    """A journaled call, by its ``seq`` (what ``ratchet resolve --op`` takes)."""
    return _fields(op)


def event_json(event: Event) -> dict[str, Any]:
    """An event; a step its data names is numbered from 1, as ``step``."""
    fields = _fields(event)
    data = dict(fields["data"])
    if event.kind in _AGENT_STEP_EVENTS and "index" in data:
        data["step"] = _step_number(data.pop("index"))
    elif event.kind == "waiting" and data.get("reason") == "approval" and "step" in data:
        data["step"] = _step_number(data["step"])
    fields["data"] = data
    return fields


# The names of the key columns of a table's rows, as the JSON of their records names them.
_KEY_NAMES = {"tasks": ("task_id",), "events": ("task_id", "seq")}


def unreadable_json(problem: CorruptRecord) -> dict[str, Any]:
    """A stored row that cannot be read: its key, and what is wrong with it as ``unreadable``."""
    names = _KEY_NAMES.get(problem.table, ())
    return {**dict(zip(names, problem.key, strict=False)), "unreadable": problem.problem}


def session_json(session: Session, *, tasks: int | None, turns: Any) -> dict[str, Any]:
    """A session of `ratchet sessions`: its id, times, version, and its task list's size."""
    return {
        "session_id": session.id,
        "created_at": iso_time(session.created_at),
        "updated_at": iso_time(session.updated_at),
        "version": session.version,
        "tasks": tasks,
        "turns": turns,
    }


def schedule_json(schedule: Schedule, next_due: dt.datetime) -> dict[str, Any]:
    """A schedule of `ratchet schedules`: its id, cron, next due time and what it makes."""
    return {
        "schedule_id": schedule.id,
        "every": schedule.cron,
        "next_due": iso_time(next_due),
        "instruction": schedule.template.instruction,
        "workflow": schedule.template.workflow,
    }


# --------------------------------------------------------------------------- what commands did


def queued_json(task_id: str, starts_at: dt.datetime) -> dict[str, Any]:
    """What `ratchet submit --json` prints for a task: its id and when it may start."""
    return {"task_id": task_id, "starts_at": iso_time(starts_at)}


def scheduled_json(schedule_id: str, next_due: dt.datetime) -> dict[str, Any]:
    """What `ratchet submit --every --json` prints: the schedule's id and its first due time."""
    return {"schedule_id": schedule_id, "next_due": iso_time(next_due)}


def task_view_json(view: TaskView) -> dict[str, Any]:
    """What `ratchet show --json` prints."""
    return {
        "task": task_json(view.task),
        "steps": [step_json(step) for step in view.steps],
        "events": [
            event_json(item) if isinstance(item, Event) else unreadable_json(item)
            for item in in_seq_order(view.events, view.unreadable_events)
        ],
        "pending_approvals": [approval_json(approval) for approval in view.pending_approvals],
        "question": view.question,
        "in_doubt": [operation_json(op) for op in view.in_doubt],
        "pending_messages": [
            {"seq": m.seq, "name": m.name, "payload": m.payload, "sent_at": iso_time(m.sent_at)}
            for m in view.pending_messages
        ],
        "children": [
            {
                "task_id": child.id,
                "name": child.name,
                "status": str(child.status),
                "waiting_on": child.waiting_on,
            }
            for child in view.children
        ],
    }


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
                "step": _step_number(step.index),
                "name": step.name,
                "status": str(step.status),
                "failure_message": step.failure_message,
            }
            for step in progress.steps
        ],
        "usage": {"llm_tokens": progress.llm_tokens, "steps": progress.steps_done},
    }

"""The JSON shape of each stored record, built in this module only, and the key rules every JSON
Ratchet prints follows.

`ratchet ... --json` (ratchet.cli.json_output), the HTTP API and the MCP
documents (ratchet.views.documents) print records through these functions, so
one thing has one key wherever a program reads it:

- a task's id is ``task_id``, never a bare ``id``;
- a step is numbered from 1, as people count, under the key ``step``: in a
  task's steps, in an approval, in the data of the events that name a step
  (the store keeps `Step.index` from 0; this is the one place that converts);
- every time is ISO 8601 in UTC with its offset, ``2025-01-02T09:00:00+00:00``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..errors import CorruptRecord
from ..printable import printable_json
from ..records import (
    Approval,
    Checkpoint,
    Event,
    InboxMessage,
    Lease,
    Operation,
    Session,
    Step,
    StreamEntry,
    Task,
)
from .langgraph_thread import thread_json
from .task import Spend, TaskView, in_seq_order, what_next

if TYPE_CHECKING:  # a schedule's module reads cron expressions (croniter): no part of a task's shape
    from ..schedules import Schedule

__all__ = [
    "approval_json",
    "checkpoint_json",
    "event_json",
    "inbox_message_json",
    "iso_time",
    "lease_json",
    "operation_json",
    "schedule_json",
    "session_json",
    "spend_json",
    "step_json",
    "step_number",
    "stream_entry_json",
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


def iso_time(moment: dt.datetime | None) -> str | None:
    """A time as JSON carries it: ISO 8601, in UTC, with its offset (a naive time is taken as UTC)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat()


# What a record's dump holds most: taken by exact type first (a listing of 100,000 tasks
# converts five million values), before the checks that also admit subclasses.
_AS_IS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """`value` with every time written by `iso_time` and every tuple as a list."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is dict:
        return {key: _plain(item) for key, item in value.items()}
    if kind is list:
        return [_plain(item) for item in value]
    if isinstance(value, dt.datetime):
        return iso_time(value)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _fields(record: BaseModel) -> dict[str, Any]:
    return dict(_plain(record.model_dump(mode="python")))


def step_number(index: Any) -> Any:
    """A step's number as people count it, from the index the store keeps (None stays None)."""
    return index + 1 if isinstance(index, int) and not isinstance(index, bool) else index


def task_json(task: Task) -> dict[str, Any]:
    """A task record, its id as ``task_id``."""
    fields = _fields(task)
    return {"task_id": fields.pop("id"), **fields}


def step_json(step: Step) -> dict[str, Any]:
    """A step of a task's plan, numbered from 1 as ``step``."""
    fields = _fields(step)
    number = step_number(fields.pop("index"))
    return {"task_id": fields.pop("task_id"), "step": number, **fields}


def approval_json(approval: Approval) -> dict[str, Any]:
    """A tool call waiting for (or given) a person's decision; ``step`` counts from 1.

    ``arguments_json`` and ``edited_arguments_json`` are ``arguments`` and
    ``edited_arguments`` as the JSON text a person is shown (`printable_json`,
    indented by two): it reads back to exactly the values the call runs with,
    every integer in full, where a reader that makes numbers doubles (a
    browser's ``JSON.parse``) would round one beyond 2**53.
    """
    fields = _fields(approval)
    fields["step"] = step_number(fields["step"])
    fields["arguments_json"] = printable_json(approval.arguments, indent=2)
    edited = approval.edited_arguments
    fields["edited_arguments_json"] = None if edited is None else printable_json(edited, indent=2)
    return fields


def operation_json(op: Operation) -> dict[str, Any]:
    """A journaled call, by its ``seq`` (what ``ratchet resolve --op`` takes)."""
    return _fields(op)


def event_json(event: Event) -> dict[str, Any]:
    """An event; a step its data names is numbered from 1, as ``step``."""
    fields = _fields(event)
    data = dict(fields["data"])
    if event.kind in _AGENT_STEP_EVENTS and "index" in data:
        data["step"] = step_number(data.pop("index"))
    elif event.kind == "waiting" and data.get("reason") == "approval" and "step" in data:
        data["step"] = step_number(data["step"])
    fields["data"] = data
    return fields


# The names of the key columns of a table's rows, as the JSON of their records names them.
_KEY_NAMES = {
    "tasks": ("task_id",),
    "events": ("task_id", "seq"),
    "approvals": ("task_id", "seq"),
    "task_changes": ("position",),
}


def stream_entry_json(entry: StreamEntry) -> dict[str, Any]:
    """An entry of a task's stream, by its ``offset`` (what a reader resumes from: the next one).

    ``kind`` is ``text`` (a piece of a model's answer, in ``value``),
    ``attempt`` and ``end`` (an attempt of the model call ``seq`` begins,
    ends), or ``value`` (a workflow's own entry under ``key``); docs/streaming.md.
    """
    fields = _fields(entry)
    fields["kind"] = str(entry.kind)
    return fields


def unreadable_json(problem: CorruptRecord) -> dict[str, Any]:
    """A stored row that cannot be read: its key, and what is wrong with it as ``unreadable``."""
    names = _KEY_NAMES.get(problem.table, ())
    return {**dict(zip(names, problem.key, strict=False)), "unreadable": problem.problem}


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """A checkpoint by its number (what `ratchet fork --checkpoint` takes), without its snapshot."""
    return {
        "task_id": checkpoint.task_id,
        "checkpoint": checkpoint.number,
        "created_at": iso_time(checkpoint.created_at),
        "last_seq": checkpoint.last_seq,
        "message_cursor": checkpoint.message_cursor,
        "status": str(checkpoint.task.status),
        "steps_completed": sum(1 for step in checkpoint.steps if str(step.status) == "completed"),
    }


def inbox_message_json(message: InboxMessage) -> dict[str, Any]:
    """A message sent to a task (`ratchet send`), by its ``seq`` in the task's inbox."""
    return {
        "seq": message.seq,
        "name": message.name,
        "payload": message.payload,
        "sent_at": iso_time(message.sent_at),
    }


def lease_json(lease: Lease) -> dict[str, Any]:
    """A worker's claim on a task, with whether it is live now."""
    return {**_fields(lease), "live": lease.is_live()}


def task_view_json(view: TaskView) -> dict[str, Any]:
    """What `ratchet show --json` prints (the MCP task document builds on it).

    For a task waiting on a timer, ``next`` says in a sentence or two what it
    does next, ``decided_approval`` is the call a person decided that it has not
    run yet (else null), and ``wakes_at`` when its timer fires (null: due now).
    A fork's ``forked`` is its ``task_forked`` event: where it was forked
    from and what its overrides changed (null for any other task). A LangGraph
    thread's task has ``langgraph``: its checkpoints, pending writes and
    interrupts (`thread_json`; its steps are its checkpoints).
    """
    upcoming = what_next(view.task, view.decided, view.wakes_at)
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
        "pending_messages": [inbox_message_json(m) for m in view.pending_messages],
        "children": [
            {
                "task_id": child.id,
                "name": child.name,
                "status": str(child.status),
                "waiting_on": child.waiting_on,
            }
            for child in view.children
        ],
        "spend": spend_json(view.spend),
        "next": " ".join(upcoming) or None,
        "decided_approval": None if view.decided is None else approval_json(view.decided),
        "wakes_at": iso_time(view.wakes_at),
        "forked": None if view.forked is None else event_json(view.forked),
        **({} if view.thread is None else {"langgraph": thread_json(view.thread)}),
    }


def spend_json(spend: Spend) -> dict[str, Any]:
    """A task's spending: tokens, US dollars (priced calls only), unpriced calls, limit, what is left."""
    return {
        "llm_tokens": spend.llm_tokens,
        "cost": spend.cost,
        "unpriced_calls": spend.unpriced_calls,
        "max_cost": spend.max_cost,
        "cost_left": spend.cost_left,
    }


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
    """A schedule of `ratchet schedules`: its id, cron and zone, state, next due time and what it makes.

    ``next_due`` is null while the schedule is paused; ``last_task`` is the
    last task it made (the run ``overlap: skip`` waits for).
    """
    return {
        "schedule_id": schedule.id,
        "every": schedule.cron,
        "tz": schedule.tz,
        "overlap": schedule.overlap,
        "paused": schedule.paused,
        "next_due": None if schedule.paused else iso_time(next_due),
        "last_task": schedule.last_task,
        "instruction": schedule.template.instruction,
        "workflow": schedule.template.workflow,
    }

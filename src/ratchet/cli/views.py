"""What `show`, a finished run and `sessions` display, read from the store in one place.

The records here are loaded by the commands and handed to `ratchet.cli.render`
(for people) or `ratchet.cli.json_output` (for programs); neither reads a store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engine.people import pending_question, question_text
from ..errors import CorruptRecord
from ..inbox_message import InboxMessage
from ..model import (
    Approval,
    Event,
    Operation,
    OpKind,
    OpStatus,
    Session,
    Step,
    Task,
    WaitReason,
    utcnow,
)
from ..store import StoreOps

__all__ = [
    "Outcome",
    "SessionSummary",
    "TaskView",
    "in_doubt_ops",
    "in_seq_order",
    "in_tree_order",
    "load_outcome",
    "load_task_view",
    "open_question",
    "pending_approvals",
]

SHOW_EVENT_COUNT = 10


@dataclass(frozen=True)
class TaskView:
    """Everything `ratchet show` displays about one task."""

    task: Task
    steps: list[Step]
    pending_approvals: list[Approval]
    question: str | None
    in_doubt: list[Operation]
    events: list[Event]
    unreadable_events: list[CorruptRecord] = field(default_factory=list)
    pending_messages: list[InboxMessage] = field(default_factory=list)  # sent, not yet received
    children: list[Task] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """How a run (`ratchet run`, `ratchet resume`) left a task, and what it waits on if it waits."""

    task: Task
    in_doubt: list[Operation]
    pending_approvals: list[Approval]
    question: str | None
    wakes_at: dt.datetime | None


@dataclass(frozen=True)
class SessionSummary:
    """A session as `ratchet sessions` lists it.

    Attributes:
        tasks: how many items its task list holds; None when it keeps none.
        turns: how many chat turns it had, as the session counts them.
    """

    session: Session
    tasks: int | None
    turns: Any


async def pending_approvals(tx: StoreOps, task: Task) -> list[Approval]:
    """Return the tool calls waiting for a person's approval (``ratchet approve`` / ``deny``)."""
    if task.waiting_on is not WaitReason.APPROVAL:
        return []
    return await tx.list_approvals(task.id, pending_only=True)


async def open_question(tx: StoreOps, task: Task) -> str | None:
    """Return the question a task waiting for input asks (``ratchet answer``), or None."""
    if task.waiting_on is not WaitReason.INPUT:
        return None
    asked = await pending_question(tx, task.id)
    return None if asked is None else question_text(asked)


async def in_doubt_ops(tx: StoreOps, task: Task) -> list[Operation]:
    """Return the tool calls a person must settle (`ratchet resolve`) before the task goes on.

    When the task waits ``in_doubt``: its tool operations that were started
    and have no result (the worker stopped while they were in flight).
    """
    if task.waiting_on is not WaitReason.IN_DOUBT:
        return []
    return [
        op for op in await tx.list_ops(task.id) if op.status is OpStatus.STARTED and op.kind is OpKind.TOOL
    ]


async def load_task_view(tx: StoreOps, task_id: str) -> TaskView:
    """Read what `ratchet show` displays; `tx` should be one read, so the parts agree."""
    task = await tx.get_task(task_id)
    unreadable: list[CorruptRecord] = []
    return TaskView(
        task=task,
        steps=await tx.list_steps(task_id),
        pending_approvals=await pending_approvals(tx, task),
        question=await open_question(tx, task),
        in_doubt=await in_doubt_ops(tx, task),
        events=await tx.last_events(task_id, SHOW_EVENT_COUNT, unreadable=unreadable),
        unreadable_events=unreadable,
        pending_messages=await tx.list_inbox(task_id, pending_only=True),
        children=await tx.list_children(task_id),
    )


def in_tree_order(tasks: Sequence[Task]) -> list[tuple[int, Task]]:
    """The tasks with their depth, each parent followed by its children (`ratchet tasks --tree`).

    A task whose parent is not among `tasks` is shown at the top level.
    """
    listed = {task.id for task in tasks}
    children: dict[str | None, list[Task]] = {}
    for task in tasks:
        parent = task.parent_id if task.parent_id in listed else None
        children.setdefault(parent, []).append(task)
    ordered: list[tuple[int, Task]] = []
    pending = [(0, task) for task in reversed(children.get(None, []))]
    while pending:
        depth, task = pending.pop()
        ordered.append((depth, task))
        pending.extend((depth + 1, child) for child in reversed(children.get(task.id, [])))
    return ordered


def in_seq_order(events: Sequence[Event], unreadable: Sequence[CorruptRecord]) -> list[Event | CorruptRecord]:
    """A task's events and its event rows that cannot be read, in the order they were written."""
    return sorted([*events, *unreadable], key=_event_seq)


def _event_seq(item: Event | CorruptRecord) -> tuple[int, str]:
    if isinstance(item, Event):
        return item.seq, ""
    seq = item.key[-1]  # an unreadable row's seq column may hold anything
    return (seq, "") if isinstance(seq, int) else (-1, str(seq))


async def load_outcome(tx: StoreOps, task: Task) -> Outcome:
    """How a task was left, with what it waits on, for the outcome view."""
    wakes_at = None
    if task.waiting_on is WaitReason.TIMER:
        now = utcnow()  # a trigger already due is a start the run here made moot
        times = [trigger.fire_at for trigger in await tx.list_triggers(task.id) if trigger.fire_at > now]
        wakes_at = min(times, default=None)
    return Outcome(
        task=task,
        in_doubt=await in_doubt_ops(tx, task),
        pending_approvals=await pending_approvals(tx, task),
        question=await open_question(tx, task),
        wakes_at=wakes_at,
    )

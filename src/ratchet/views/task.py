"""What one task looks like to a reader, read from the store in one place.

`ratchet show` (ratchet.cli), ``GET /api/tasks/{id}`` and the MCP server's task
documents (ratchet.mcp) all load a task through `load_task_view`, so they agree
on what a task waits for, what it asks, and what it does next.

The engine's helpers (a task's spending, its pending question, a decided
call) are imported where they are called: `ratchet tasks` renders its table
with this module's neighbours and must not import the engine to list rows.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import CorruptRecord
from ..records import (
    Approval,
    ApprovalStatus,
    Event,
    InboxMessage,
    Operation,
    OpKind,
    OpStatus,
    Step,
    Task,
    WaitReason,
    utcnow,
)
from ..store import StoreOps
from .langgraph_thread import ThreadView, load_thread_view, thread_steps

__all__ = [
    "SHOW_EVENT_COUNT",
    "Spend",
    "TaskView",
    "fork_event",
    "in_doubt_ops",
    "in_seq_order",
    "load_next",
    "load_task_view",
    "next_wake",
    "open_question",
    "pending_approvals",
    "task_spend",
    "what_next",
]

SHOW_EVENT_COUNT = 10


@dataclass(frozen=True)
class Spend:
    """What a task's model calls used, its child tasks' included, against its cost limit.

    ``cost`` is in US dollars and counts only the priced calls; ``unpriced_calls``
    says how many had no known price (docs/limits.md).
    """

    llm_tokens: int = 0
    cost: float = 0.0
    unpriced_calls: int = 0
    max_cost: float | None = None

    @property
    def cost_left(self) -> float | None:
        """What is left of ``max_cost`` (never below 0), or None with no limit."""
        return None if self.max_cost is None else max(self.max_cost - self.cost, 0.0)


async def task_spend(tx: StoreOps, task: Task) -> Spend:
    """What `task` spent (one read of its journal and its children's totals)."""
    from ..engine.children import child_spending

    spent = await child_spending(tx, task.id)
    return Spend(
        llm_tokens=int(spent["llm_tokens"]),
        cost=spent["cost"],
        unpriced_calls=int(spent["unpriced_calls"]),
        max_cost=task.budget.max_cost,
    )


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
    spend: Spend = field(default_factory=Spend)
    # Waiting on a timer: the call a person decided that it has not run yet, and when it wakes (None: due).
    decided: Approval | None = None
    wakes_at: dt.datetime | None = None
    # A fork: the event that says where it was forked from and what it changed (runtime/what_if.py).
    forked: Event | None = None
    # A LangGraph thread's task: its checkpoints (its steps), pending writes and interrupts.
    thread: ThreadView | None = None


async def pending_approvals(tx: StoreOps, task: Task) -> list[Approval]:
    """Return the tool calls waiting for a person's approval (``ratchet approve`` / ``deny``)."""
    if task.waiting_on is not WaitReason.APPROVAL:
        return []
    return await tx.list_approvals(task.id, pending_only=True)


async def open_question(tx: StoreOps, task: Task) -> str | None:
    """Return the question a task waiting for input asks (``ratchet answer``), or None."""
    from ..engine.people import pending_question, question_text

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


async def next_wake(tx: StoreOps, task: Task) -> dt.datetime | None:
    """When a task waiting on a timer (or its turn under a limit) wakes: its next trigger to come, or None."""
    if task.waiting_on not in (WaitReason.TIMER, WaitReason.LIMIT):
        return None
    now = utcnow()  # a trigger due already is picked up by the next worker or `ratchet resume`
    return min(
        (trigger.fire_at for trigger in await tx.list_triggers(task.id) if trigger.fire_at > now),
        default=None,
    )


async def load_next(tx: StoreOps, task: Task) -> tuple[Approval | None, dt.datetime | None]:
    """What `what_next` tells of a task: the call decided and not run yet, and when it wakes."""
    from ..engine.people import decided_not_run

    if task.waiting_on is WaitReason.LIMIT:
        return None, await next_wake(tx, task)
    if task.waiting_on is not WaitReason.TIMER:
        return None, None
    return await decided_not_run(tx, task), await next_wake(tx, task)


async def load_task_view(tx: StoreOps, task_id: str, *, event_count: int = SHOW_EVENT_COUNT) -> TaskView:
    """Read what `ratchet show` displays; `tx` should be one read, so the parts agree.

    Raises:
        TaskNotFound: no task has that id.
    """
    task = await tx.get_task(task_id)
    unreadable: list[CorruptRecord] = []
    decided, wakes_at = await load_next(tx, task)
    thread = await load_thread_view(tx, task)
    return TaskView(
        task=task,
        steps=await tx.list_steps(task_id) if thread is None else thread_steps(thread, task),
        pending_approvals=await pending_approvals(tx, task),
        question=await open_question(tx, task),
        in_doubt=await in_doubt_ops(tx, task),
        events=await tx.last_events(task_id, event_count, unreadable=unreadable),
        unreadable_events=unreadable,
        pending_messages=await tx.list_inbox(task_id, pending_only=True),
        children=await tx.list_children(task_id),
        spend=await task_spend(tx, task),
        decided=decided,
        wakes_at=wakes_at,
        forked=await fork_event(tx, task),
        thread=thread,
    )


async def fork_event(tx: StoreOps, task: Task) -> Event | None:
    """The ``task_forked`` event of a fork (None for any other task, a retry included)."""
    if task.forked_from is None:
        return None
    found = await tx.list_events(task.id, limit=1, kinds=("task_forked",))
    return found[0] if found else None


def in_seq_order(events: Sequence[Event], unreadable: Sequence[CorruptRecord]) -> list[Event | CorruptRecord]:
    """A task's events and its event rows that cannot be read, in the order they were written."""
    return sorted([*events, *unreadable], key=_event_seq)


def _event_seq(item: Event | CorruptRecord) -> tuple[int, str]:
    if isinstance(item, Event):
        return item.seq, ""
    seq = item.key[-1]  # an unreadable row's seq column may hold anything
    return (seq, "") if isinstance(seq, int) else (-1, str(seq))


def _utc_text(moment: dt.datetime) -> str:
    """A time in a sentence: ``2026-05-04 12:00:00 UTC``."""
    return f"{moment.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"


def what_next(
    task: Task,
    decided: Approval | None,
    wakes_at: dt.datetime | None,
    *,
    resume: str | None = None,
    at: Callable[[dt.datetime], str] = _utc_text,
) -> list[str]:
    """What a task waiting on a timer or a limit does next, for people: a line or two (none for another task).

    A person's decision leaves the task ``waiting(timer)``, queued for the next
    worker: this says which call was decided, how, and what runs it.

    Args:
        decided: the call a person decided that the task has not run yet (`decided_not_run`).
        wakes_at: when its timer fires (`next_wake`); None: due now.
        resume: the command that resumes the task, as the reader would type it
            (by default ``ratchet resume TASK``).
        at: how a time is written (in UTC by default; the CLI writes local time).
    """
    if task.waiting_on not in (WaitReason.TIMER, WaitReason.LIMIT):
        return []
    resume = resume or shlex.join(["ratchet", "resume", task.id])
    pick_up = f"when a running `ratchet worker` picks the task up, or now with `{resume}`"
    if decided is None:
        if wakes_at is not None:
            return [
                f"It continues at {at(wakes_at)}: a running `ratchet worker` picks it up then, "
                f"or `{resume}` after that."
            ]
        return [f"It continues {pick_up}."]
    when = "" if decided.decided_at is None else f" at {at(decided.decided_at)}"
    if decided.status is ApprovalStatus.DENIED:
        return [
            f"Denied{when}: {decided.tool} (operation {decided.seq}): {decided.reason}.",
            f"The call fails as denied, and the task goes on, {pick_up}.",
        ]
    how = "" if decided.edited_arguments is None else ", with edited arguments"
    runs = decided.arguments if decided.edited_arguments is None else decided.edited_arguments
    return [
        f"Approved{when}{how}: {decided.tool} {json.dumps(runs, ensure_ascii=False)} "
        f"(operation {decided.seq}); it has not run yet.",
        f"It runs {pick_up}.",
    ]

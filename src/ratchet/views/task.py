"""What one task looks like to a reader, read from the store in one place.

`ratchet show` (ratchet.cli) and the MCP server's task documents
(ratchet.mcp) both load a task through `load_task_view`, so they agree on what
a task waits for and what it asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..engine.children import child_spending
from ..engine.people import pending_question, question_text
from ..errors import CorruptRecord
from ..records import Approval, Event, InboxMessage, Operation, OpKind, OpStatus, Step, Task, WaitReason
from ..store import StoreOps

__all__ = [
    "SHOW_EVENT_COUNT",
    "Spend",
    "TaskView",
    "in_doubt_ops",
    "in_seq_order",
    "load_task_view",
    "open_question",
    "pending_approvals",
    "task_spend",
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


async def load_task_view(tx: StoreOps, task_id: str, *, event_count: int = SHOW_EVENT_COUNT) -> TaskView:
    """Read what `ratchet show` displays; `tx` should be one read, so the parts agree.

    Raises:
        TaskNotFound: no task has that id.
    """
    task = await tx.get_task(task_id)
    unreadable: list[CorruptRecord] = []
    return TaskView(
        task=task,
        steps=await tx.list_steps(task_id),
        pending_approvals=await pending_approvals(tx, task),
        question=await open_question(tx, task),
        in_doubt=await in_doubt_ops(tx, task),
        events=await tx.last_events(task_id, event_count, unreadable=unreadable),
        unreadable_events=unreadable,
        pending_messages=await tx.list_inbox(task_id, pending_only=True),
        children=await tx.list_children(task_id),
        spend=await task_spend(tx, task),
    )


def in_seq_order(events: Sequence[Event], unreadable: Sequence[CorruptRecord]) -> list[Event | CorruptRecord]:
    """A task's events and its event rows that cannot be read, in the order they were written."""
    return sorted([*events, *unreadable], key=_event_seq)


def _event_seq(item: Event | CorruptRecord) -> tuple[int, str]:
    if isinstance(item, Event):
        return item.seq, ""
    seq = item.key[-1]  # an unreadable row's seq column may hold anything
    return (seq, "") if isinstance(seq, int) else (-1, str(seq))

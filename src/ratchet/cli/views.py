"""What `show`, a finished run and `sessions` display, read from the store in one place.

The records here are loaded by the commands and handed to `ratchet.cli.render`
(for people) or `ratchet.cli.json_output` (for programs); neither reads a store.
A task's own view (`TaskView`, `load_task_view`) lives in `ratchet.views.task`,
shared with the MCP server, and is re-exported here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..records import Approval, Operation, Task
from ..store import StoreOps
from ..views.task import (
    Spend,
    TaskView,
    in_doubt_ops,
    in_seq_order,
    load_task_view,
    next_wake,
    open_question,
    pending_approvals,
)

__all__ = [
    "Outcome",
    "Spend",
    "TaskView",
    "in_doubt_ops",
    "in_seq_order",
    "in_tree_order",
    "load_outcome",
    "load_task_view",
    "open_question",
    "pending_approvals",
]


@dataclass(frozen=True)
class Outcome:
    """How a run (`ratchet run`, `ratchet resume`) left a task, and what it waits on if it waits."""

    task: Task
    in_doubt: list[Operation]
    pending_approvals: list[Approval]
    question: str | None
    wakes_at: dt.datetime | None


class _Listed(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def parent_id(self) -> str | None: ...


_T = TypeVar("_T", bound=_Listed)


def in_tree_order(tasks: Sequence[_T]) -> list[tuple[int, _T]]:
    """The tasks (records or listing rows) with their depth, each parent followed by its children.

    What `ratchet tasks --tree` shows; a task whose parent is not among `tasks` is shown at the top level.
    """
    listed = {task.id for task in tasks}
    children: dict[str | None, list[_T]] = {}
    for task in tasks:
        parent = task.parent_id if task.parent_id in listed else None
        children.setdefault(parent, []).append(task)
    ordered: list[tuple[int, _T]] = []
    pending = [(0, task) for task in reversed(children.get(None, []))]
    while pending:
        depth, task = pending.pop()
        ordered.append((depth, task))
        pending.extend((depth + 1, child) for child in reversed(children.get(task.id, [])))
    return ordered


async def load_outcome(tx: StoreOps, task: Task) -> Outcome:
    """How a task was left, with what it waits on, for the outcome view."""
    return Outcome(
        task=task,
        in_doubt=await in_doubt_ops(tx, task),
        pending_approvals=await pending_approvals(tx, task),
        question=await open_question(tx, task),
        wakes_at=await next_wake(tx, task),
    )

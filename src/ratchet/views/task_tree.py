"""A task's family as a tree: the tasks above it, and every task below it to any depth.

``GET /api/tasks/{id}/tree`` answers with `load_task_tree`; the dashboard
draws it. Each task comes with its status and what it spent (its model
calls and those of the children it waited for, as its budget counts them).
The tree is read breadth first and stops after `MAX_TREE_TASKS` tasks: a
task whose children were not read says so (``more_children``), so a huge
family never makes one answer unbounded.
"""

from __future__ import annotations

from typing import Any

from ..engine.children import child_spending
from ..errors import CorruptRecord, TaskNotFound
from ..records import Task
from ..store import StoreOps

__all__ = ["MAX_ANCESTORS", "MAX_TREE_TASKS", "load_task_tree"]

MAX_TREE_TASKS = 2000
MAX_ANCESTORS = 100


async def _node(tx: StoreOps, task: Task) -> dict[str, Any]:
    spent = await child_spending(tx, task.id)
    return {
        "task_id": task.id,
        "name": task.name,
        "status": str(task.status),
        "waiting_on": None if task.waiting_on is None else str(task.waiting_on),
        "llm_tokens": int(spent["llm_tokens"]),
        "cost": spent["cost"],
        "unpriced_calls": int(spent["unpriced_calls"]),
        "children": [],
        "more_children": False,
    }


async def _ancestors(tx: StoreOps, task: Task) -> list[dict[str, Any]]:
    """The tasks above `task`, the root first (a parent deleted or unreadable ends the line)."""
    found: list[dict[str, Any]] = []
    parent_id = task.parent_id
    while parent_id is not None and len(found) < MAX_ANCESTORS:
        try:
            parent = await tx.get_task(parent_id)
        except (TaskNotFound, CorruptRecord):
            found.append({"task_id": parent_id, "name": None, "status": None})
            break
        found.append({"task_id": parent.id, "name": parent.name, "status": str(parent.status)})
        parent_id = parent.parent_id
    found.reverse()
    return found


async def load_task_tree(tx: StoreOps, task_id: str, *, limit: int = MAX_TREE_TASKS) -> dict[str, Any]:
    """The task's ``ancestors`` (root first) and its ``tree``: itself, its children, theirs, and so on.

    Raises:
        TaskNotFound: no task has that id.
    """
    task = await tx.get_task(task_id)
    root = await _node(tx, task)
    shown = 1
    level = [root]
    while level:
        below = []
        for node in level:
            if shown >= limit:
                node["more_children"] = bool(await tx.list_children(node["task_id"]))
                continue
            for child in await tx.list_children(node["task_id"]):
                if shown >= limit:
                    node["more_children"] = True
                    break
                entry = await _node(tx, child)
                node["children"].append(entry)
                below.append(entry)
                shown += 1
        level = below
    return {"ancestors": await _ancestors(tx, task), "tree": root, "tasks": shown}

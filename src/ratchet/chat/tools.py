"""The tools of the task-list assistant, bound to one store and one session.

Every change is a session-state change made through
`StateStore.update_session_state` (so concurrent turns never lose one) and
applied once per call's idempotency key (so a call run again after a crash
does not apply twice). A bad index is a message to the model, not a failure.
"""

from __future__ import annotations

from typing import Any

from ..errors import SessionNotFound
from ..records import RiskLevel
from ..store import StateStore
from ..tools import Tool, ToolContext, tool
from . import tasklist

__all__ = ["CHAT_TOOL_NAMES", "MODEL_TOOL_NAMES", "session_tools"]

MODEL_TOOL_NAMES = ("add_task", "update_task", "remove_task", "list_tasks")
CHAT_TOOL_NAMES = (*MODEL_TOOL_NAMES, "load_session", "record_exchange")


def session_tools(store: StateStore, session_id: str) -> list[Tool]:
    """The chat tools for `session_id`: the four the model sees, and two the turn uses itself."""

    async def change_once(ctx: ToolContext, change: tasklist.Change) -> str:
        reports: list[str] = []

        def apply(state: dict[str, Any]) -> dict[str, Any]:
            new_state, report = tasklist.apply_once(state, ctx.idempotency_key, change)
            reports.append(report)  # the change may run again on a conflict: the last run counts
            return new_state

        await store.update_session_state(session_id, apply)
        return reports[-1]

    async def current_state() -> dict[str, Any]:
        try:
            return dict((await store.get_session(session_id)).state)
        except SessionNotFound:
            return {}

    @tool(name="add_task")
    async def add_task(description: str, ctx: ToolContext) -> str:
        """Add a task to the user's list, 0% done.

        Args:
            description: what the task is, in a few words.
        """
        return await change_once(ctx, tasklist.add(description))

    @tool(name="update_task")
    async def update_task(index: int, completion: int, ctx: ToolContext) -> str:
        """Set how far a task is done, in percent (kept within 0 to 100).

        Args:
            index: the task's number in the list, from 1.
            completion: the percentage done, 0 to 100.
        """
        return await change_once(ctx, tasklist.update(index, completion))

    @tool(name="remove_task")
    async def remove_task(index: int, ctx: ToolContext) -> str:
        """Remove a task from the list; the tasks after it move up one number.

        Args:
            index: the task's number in the list, from 1.
        """
        return await change_once(ctx, tasklist.remove(index))

    @tool(name="list_tasks", risk=RiskLevel.READ_ONLY)
    async def list_tasks() -> str:
        """List the tasks with their numbers and how far each is done."""
        return tasklist.describe(tasklist.tasks_of(await current_state()))

    @tool(name="load_session", risk=RiskLevel.READ_ONLY)
    async def load_session() -> dict[str, Any]:
        """Read the task list and the recent exchanges (for the turn's prompt)."""
        state = await current_state()
        return {"tasks": tasklist.tasks_of(state), "history": tasklist.history_of(state)}

    @tool(name="record_exchange")
    async def record_exchange(user: str, assistant: str, ctx: ToolContext) -> str:
        """Keep the turn's exchange in the session's history."""
        return await change_once(ctx, tasklist.record_exchange(user, assistant, ctx.task_id))

    return [add_task, update_task, remove_task, list_tasks, load_session, record_exchange]

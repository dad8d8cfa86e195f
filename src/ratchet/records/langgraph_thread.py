"""A LangGraph thread as a Ratchet task: its task id and workflow (docs/integrations.md).

Every thread `RatchetSaver` writes is task ``langgraph:<thread id>`` of the
workflow `THREAD_WORKFLOW` (ratchet.integrations.langgraph.thread), whose
inputs name the thread and, when the saver was told, the graph. The readers
(`ratchet show`, the HTTP API, the dashboard, MCP) know a thread's task by
these two, below the bridge: they never import LangGraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .task import Task

__all__ = ["THREAD_TASK_PREFIX", "THREAD_WORKFLOW", "thread_of", "thread_task_id"]

THREAD_WORKFLOW = "ratchet.integrations.langgraph.thread:langgraph_thread"
"""The reference of the workflow a thread's task runs (the same string as its `Workflow.reference`)."""

THREAD_TASK_PREFIX = "langgraph:"


def thread_task_id(thread_id: str) -> str:
    """The id of a thread's task, which is also the key of a fenced saver's lease on the thread."""
    return f"{THREAD_TASK_PREFIX}{thread_id}"


def thread_of(task: Task) -> str | None:
    """The LangGraph thread a task is, or None for any other task."""
    if task.workflow != THREAD_WORKFLOW:
        return None
    thread_id = task.inputs_params.get("thread_id")
    return thread_id if isinstance(thread_id, str) else None

"""Who may write a task: the agent that owns it, and the agents it was granted to.

A task belongs to the agent its ``agent`` names (the one that created it, or
the one it was handed off to). Every surface that acts as an agent (an MCP
connection, docs/mcp.md "Who may write") asks here before it writes a task:
the owner may do anything a person may; an agent the task was granted to
(`TaskGrant`) may write it too, but only the owner gives it away or grants it;
any other agent, or a connection acting as no agent, may read but not write.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from ..errors import WriteRefused
from ..records import Task

if TYPE_CHECKING:
    from ..store import StoreOps

__all__ = ["OWNER_ONLY", "anonymous_refusal", "check_may_write", "write_refusal"]

OWNER_ONLY = frozenset({"hand it off", "grant it"})  # what a grant does not give: giving the task away


def anonymous_refusal(task_id: str, action: str) -> str:
    """The line refusing `action` on task `task_id` to a connection that acts as no agent."""
    return (
        f"task {task_id}: this connection acts as no agent, so it may not {action}; give it an "
        "identity (`ratchet mcp --agent ID`, or over HTTP a token that names an agent)"
    )


def write_refusal(task: Task, agent: str | None, granted: Collection[str], action: str) -> str | None:
    """Why `agent` may not `action` `task` (one line), or None when it may.

    Args:
        agent: the agent acting; None for a connection that acts as no agent.
        granted: the agents the task was granted to.
        action: what it would do, as the line says it: "patch it", "hand it off" ...
    """
    if agent is None:
        return anonymous_refusal(task.id, action)
    if agent == task.agent:
        return None
    if agent in granted:
        if action not in OWNER_ONLY:
            return None
        return (
            f"task {task.id} belongs to agent {task.agent}; agent {agent} was granted it and may write "
            f"it, but only {task.agent} may {action}"
        )
    return (
        f"task {task.id} belongs to agent {task.agent}; agent {agent} may not {action}: "
        f"ask {task.agent} to hand it off or grant it"
    )


async def check_may_write(tx: StoreOps, task_id: str, agent: str | None, action: str) -> Task:
    """The task, if `agent` may `action` it (see `write_refusal`); read in `tx`.

    Raises:
        TaskNotFound: no task has that id.
        WriteRefused: it may not; the message says why and what to do.
    """
    task = await tx.get_task(task_id)
    granted = {grant.agent for grant in await tx.list_grants(task_id)}
    refusal = write_refusal(task, agent, granted, action)
    if refusal is not None:
        raise WriteRefused(refusal)
    return task

"""`GrantOps`: the store operations of task grants (an agent's leave to write a task it does not own).

Part of `StoreOps` (store.py); the memory store (store/memory/grants.py) and
every SQL store (store/sql/grants.py) implement them with the behaviour written here.
"""

from __future__ import annotations

import abc

from ...records import TaskGrant

__all__ = ["GrantOps"]


class GrantOps(abc.ABC):
    """Granting an agent leave to write a task, and listing a task's grants."""

    @abc.abstractmethod
    async def grant_task(self, grant: TaskGrant) -> bool:
        """Keep `grant`; True when it is new, False when that agent already had one (kept as it was).

        Raises:
            TaskNotFound: no task has that id.
        """

    @abc.abstractmethod
    async def list_grants(self, task_id: str) -> list[TaskGrant]:
        """The task's grants, oldest first (empty for a task with none, or no such task)."""

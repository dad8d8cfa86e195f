"""The grant operations (`GrantOps`) of the memory store, as part of its operations."""

from __future__ import annotations

from ...errors import TaskNotFound
from ...records import TaskGrant
from ..ops.grants import GrantOps
from .undo import UndoLog

__all__ = ["MemoryGrants"]


class MemoryGrants(GrantOps, UndoLog):
    """Each task's grants as a dict of JSON text by agent; ``tasks`` is the memory store's task table."""

    tasks: dict[str, str]

    def __init__(self) -> None:
        super().__init__()
        self.grants: dict[str, dict[str, str]] = {}

    async def grant_task(self, grant: TaskGrant) -> bool:
        if grant.task_id not in self.tasks:
            raise TaskNotFound(grant.task_id)
        granted = self.grants.get(grant.task_id, {})
        if grant.agent in granted:
            return False
        if grant.task_id not in self.grants:
            self._set(self.grants, grant.task_id, {})
        self._set(self.grants[grant.task_id], grant.agent, grant.to_json())
        return True

    async def list_grants(self, task_id: str) -> list[TaskGrant]:
        found = [TaskGrant.from_json(text) for text in self.grants.get(task_id, {}).values()]
        return sorted(found, key=lambda g: (g.granted_at, g.agent))

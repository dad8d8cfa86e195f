"""The grant operations (`GrantOps`) written once for every SQL database, as part of `SqlOps`."""

from __future__ import annotations

from ...records import TaskGrant, TaskStatus
from ..ops.grants import GrantOps
from . import rows
from .driver import Driver

__all__ = ["SqlGrants"]


class SqlGrants(GrantOps):
    """`GrantOps` over a driver; `SqlOps` supplies the driver and the task lock."""

    _d: Driver

    async def _lock_task(self, task_id: str) -> TaskStatus:
        raise NotImplementedError  # SqlOps's

    async def grant_task(self, grant: TaskGrant) -> bool:
        await self._lock_task(grant.task_id)  # no such task: TaskNotFound
        params = {
            "task_id": grant.task_id,
            "agent": grant.agent,
            "granted_by": grant.granted_by,
            "granted_at": rows.to_micros(grant.granted_at),
        }
        return await self._d.execute("insert_grant", params) > 0

    async def list_grants(self, task_id: str) -> list[TaskGrant]:
        found = await self._d.all("list_grants", {"task_id": task_id})
        return [
            TaskGrant(task_id=task_id, agent=agent, granted_by=granted_by, granted_at=rows.from_micros(at))
            for agent, granted_by, at in found
        ]

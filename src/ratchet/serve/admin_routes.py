"""Sessions, schedules, workers and their leases, and the server's health and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..errors import StoreError
from ..model import Lease, TaskStatus, utcnow
from ..record_json import lease_json, schedule_json, session_json
from ..session_listing import list_session_summaries
from .deps import RuntimeDep, TaskId
from .errors import detail

__all__ = ["router"]

router = APIRouter(tags=["admin"])

# The tasks a worker may hold: the others' leases are history.
_HELD = (TaskStatus.RUNNING, TaskStatus.WAITING, TaskStatus.QUEUED)


@router.get("/sessions", summary="Sessions, most recently updated first (`ratchet sessions --json`)")
async def sessions(rt: RuntimeDep) -> list[dict[str, Any]]:
    return [
        session_json(s.session, tasks=s.tasks, turns=s.turns) for s in await list_session_summaries(rt.store)
    ]


@router.get("/schedules", summary="Schedules, soonest first (`ratchet schedules --json`)")
async def schedules(rt: RuntimeDep) -> list[dict[str, Any]]:
    listed = sorted(await rt.schedules(), key=lambda pair: pair[1])
    return [schedule_json(schedule, due) for schedule, due in listed]


@router.get("/workers", summary="Workers holding a task's lease, and their leases")
async def workers(rt: RuntimeDep) -> list[dict[str, Any]]:
    """Each worker with a lease on an unfinished task: who it is, where, and the leases it holds.

    ``heartbeat_age_seconds`` is how long ago its newest lease was granted or
    renewed, as far as the store tells (a renewal moves the expiry on).
    """
    leases: list[Lease] = []
    async with rt.store.reading() as tx:
        for status in _HELD:
            for task in await tx.list_tasks(status):
                lease = await tx.get_lease(task.id)
                if lease is not None and not lease.released:
                    leases.append(lease)
    now = utcnow()
    by_owner: dict[str, list[Lease]] = {}
    for lease in leases:
        by_owner.setdefault(lease.owner, []).append(lease)
    listed = []
    for owner, held in sorted(by_owner.items()):
        newest = max(lease.granted_at or lease.expires_at for lease in held)
        listed.append(
            {
                "worker": owner,
                "host": held[0].host,
                "pid": held[0].pid,
                "live": any(lease.is_live(now) for lease in held),
                "heartbeat_age_seconds": max(0.0, (now - newest).total_seconds()),
                "leases": [lease_json(lease) for lease in held],
            }
        )
    return listed


@router.get("/tasks/{task_id}/leases", summary="The leases a task has had, oldest first")
async def task_leases(rt: RuntimeDep, task_id: TaskId) -> list[dict[str, Any]]:
    await rt.store.get_task(task_id)
    return [lease_json(lease) for lease in await rt.store.lease_history(task_id)]


@router.get("/health", summary="The server answers")
async def health() -> dict[str, Any]:
    return {"status": "ok"}


@router.get(
    "/ready", summary="The store answers", responses={503: {"description": "The store does not answer"}}
)
async def ready(rt: RuntimeDep) -> Any:
    """200 when a read of the store succeeds now; 503 with the store's one-line error otherwise."""
    try:
        version = await rt.store.schema_version()
    except StoreError as error:
        return detail(503, error.message)
    return JSONResponse({"status": "ready", "schema_version": version})

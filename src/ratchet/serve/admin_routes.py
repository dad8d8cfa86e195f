"""Sessions, schedules, workers and their leases, and the server's health and readiness."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse

from ..chat.listing import list_session_summaries
from ..errors import StoreError
from ..records import utcnow
from ..schedules import PAUSED_FIRE_AT
from ..views.record_json import lease_json, schedule_json, session_json
from ..views.workers import list_workers, worker_json
from .deps import ID_PATTERN, MAX_ID_CHARS, RuntimeDep, TaskId
from .errors import detail

__all__ = ["router"]

router = APIRouter(tags=["admin"])

ScheduleId = Annotated[
    str, Path(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN, description="The schedule's id.")
]
_NO_SCHEDULE: dict[int | str, dict[str, Any]] = {404: {"description": "No such schedule"}}


def _no_schedule(schedule_id: str) -> JSONResponse:
    return detail(404, f"no schedule {schedule_id!r}; GET /api/schedules lists them")


@router.get("/sessions", summary="Sessions, most recently updated first (`ratchet sessions --json`)")
async def sessions(rt: RuntimeDep) -> list[dict[str, Any]]:
    return [
        session_json(s.session, tasks=s.tasks, turns=s.turns) for s in await list_session_summaries(rt.store)
    ]


@router.get("/schedules", summary="Schedules, soonest first (`ratchet schedules --json`)")
async def schedules(rt: RuntimeDep) -> list[dict[str, Any]]:
    listed = sorted(await rt.schedules(), key=lambda pair: pair[1])
    return [schedule_json(schedule, due) for schedule, due in listed]


@router.post("/schedules/{schedule_id}/pause", summary="Pause a schedule", responses=_NO_SCHEDULE)
async def pause_schedule(rt: RuntimeDep, schedule_id: ScheduleId) -> Any:
    """No due time fires until it is resumed (`ratchet schedules --pause`); answers the schedule."""
    paused = await rt.pause_schedule(schedule_id)
    return _no_schedule(schedule_id) if paused is None else schedule_json(paused, PAUSED_FIRE_AT)


@router.post("/schedules/{schedule_id}/resume", summary="Resume a paused schedule", responses=_NO_SCHEDULE)
async def resume_schedule(rt: RuntimeDep, schedule_id: ScheduleId) -> Any:
    """From now: the due times it missed are not made up (`ratchet schedules --resume`)."""
    resumed = await rt.resume_schedule(schedule_id)
    return _no_schedule(schedule_id) if resumed is None else schedule_json(*resumed)


@router.post(
    "/schedules/{schedule_id}/trigger",
    status_code=201,
    summary="Make a schedule's task now",
    responses=_NO_SCHEDULE,
)
async def trigger_schedule(rt: RuntimeDep, schedule_id: ScheduleId) -> Any:
    """Once, even paused; its next due time stays (`ratchet schedules --trigger`)."""
    task_id = await rt.trigger_schedule(schedule_id)
    return _no_schedule(schedule_id) if task_id is None else {"schedule_id": schedule_id, "task_id": task_id}


@router.get("/workers", summary="Live workers, idle ones included, with their slots and leases")
async def workers(rt: RuntimeDep) -> list[dict[str, Any]]:
    """Each live worker, and each holding a lease on an unfinished task, by name (`ratchet workers --json`).

    A worker is who it is (``worker``, ``host``, ``pid``), whether it is
    ``live``, its ``concurrency`` (slots) and ``slots_in_use``, when it
    ``started_at``, when it was last heard from (``heartbeat_at``,
    ``heartbeat_age_seconds``), how long until the soonest of its leases
    expires unless renewed (``expires_in_seconds``: below zero it stopped
    renewing; null when it holds none) and its ``leases``. A process that
    holds leases without keeping a record of itself (``ratchet run``) has
    null ``concurrency`` and ``started_at``.
    """
    now = utcnow()
    async with rt.store.reading() as tx:
        listed = await list_workers(tx, now)
    return [worker_json(worker, now) for worker in listed]


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

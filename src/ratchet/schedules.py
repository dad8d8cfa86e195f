"""Scheduled tasks: a task template fired at due times by whichever worker claims the trigger.

A schedule is one queued trigger of kind ``schedule`` (no task) holding the
template of the tasks it makes and, for a recurring schedule, a cron
expression. The worker that claims it creates that due time's task and queues
the schedule's next due time in the same transaction as the claim, so each
due time fires once across all workers, and none is lost to a crash: either
the claim, the task and the next trigger all commit, or none does.

Due times missed while no worker ran are fired one by one when workers come
back (the next due time follows the last one, not the clock).
"""

from __future__ import annotations

import datetime as dt
import secrets

from croniter import CroniterBadCronError, CroniterBadDateError, croniter
from pydantic import BaseModel, ConfigDict

from .errors import InputError, TaskNotFound
from .model import Event, Task, Trigger, utcnow
from .store import StoreOps
from .workspace import workspace_for

__all__ = [
    "SCHEDULE_TRIGGER",
    "Schedule",
    "check_cron",
    "fire_schedule",
    "new_schedule_id",
    "next_due",
    "schedule_trigger",
]

SCHEDULE_TRIGGER = "schedule"


class Schedule(BaseModel):
    """What a schedule trigger carries: the template and when it repeats."""

    model_config = ConfigDict(frozen=True)

    id: str
    template: Task
    cron: str | None = None
    deadline_seconds: float | None = None

    @classmethod
    def from_trigger(cls, trigger: Trigger) -> Schedule:
        return cls.model_validate(trigger.payload)


def new_schedule_id() -> str:
    return f"schedule-{secrets.token_hex(4)}"


def check_cron(cron: str) -> str:
    """Return `cron` if it is a valid five-field cron expression that matches some time.

    Raises:
        InputError: it is not, or it matches no date (``0 0 30 2 *``: February has no 30th).
    """
    if len(cron.split()) != 5 or not croniter.is_valid(cron):
        raise InputError(
            f"{cron!r} is not a cron expression; give five fields, minute hour day month weekday "
            "(e.g. '*/5 * * * *' for every five minutes), times in UTC"
        )
    next_due(cron, utcnow())
    return cron


def next_due(cron: str, after: dt.datetime) -> dt.datetime:
    """The first time `cron` matches strictly after `after` (UTC).

    Raises:
        InputError: `cron` is not a cron expression, or matches no time
            (croniter looks ahead 50 years: a date that exists matches within 8).
    """
    try:
        found: dt.datetime = croniter(cron, after.astimezone(dt.UTC)).get_next(dt.datetime)
    except CroniterBadCronError as error:
        raise InputError(f"{cron!r} is not a cron expression: {error}") from None
    except CroniterBadDateError:
        raise InputError(
            f"{cron!r} never matches: its months have no such day (as February has no 30th); "
            "check its day and month fields"
        ) from None
    return found.astimezone(dt.UTC)


def schedule_trigger(schedule: Schedule, fire_at: dt.datetime) -> Trigger:
    """The queued trigger of `schedule`'s due time `fire_at`."""
    return Trigger(
        kind=SCHEDULE_TRIGGER,
        fire_at=fire_at,
        priority=schedule.template.priority,
        payload=schedule.model_dump(mode="json"),
        dedupe_key=f"{SCHEDULE_TRIGGER}:{schedule.id}",
    )


def task_id_for(schedule_id: str, due: dt.datetime) -> str:
    return f"{schedule_id}-{due.astimezone(dt.UTC):%Y%m%dT%H%M%SZ}"


async def fire_schedule(tx: StoreOps, trigger: Trigger) -> Task | None:
    """Create the task of a claimed schedule trigger's due time and queue the next one.

    Runs in the transaction that claimed `trigger`. Returns the new task,
    or None when that due time's task exists already.
    """
    schedule = Schedule.from_trigger(trigger)
    due = trigger.fire_at
    task_id = task_id_for(schedule.id, due)
    created: Task | None = None
    try:
        await tx.get_task(task_id)
    except TaskNotFound:
        now = utcnow()
        deadline = None
        if schedule.deadline_seconds is not None:
            deadline = now + dt.timedelta(seconds=schedule.deadline_seconds)
        template = schedule.template
        created = template.model_copy(
            update={
                "id": task_id,
                "created_at": now,
                "deadline": deadline,
                "workspace": None if template.workspace is None else str(workspace_for(task_id)),
            }
        )
        await tx.create_task(created)
        await tx.put_trigger(Trigger(kind="start", task_id=task_id))
        await tx.append_event(
            Event(
                task_id=task_id,
                kind="task_created",
                message=f"task created by schedule {schedule.id}",
                display_message=f"Created {created.name} ({schedule.id}, due {due:%Y-%m-%d %H:%M:%S} UTC)",
                data={"workflow": created.workflow, "schedule": schedule.id, "due": due.isoformat()},
            )
        )
    if schedule.cron is not None:
        await tx.put_trigger(schedule_trigger(schedule, next_due(schedule.cron, due)))
    return created

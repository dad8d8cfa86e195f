"""Scheduled tasks: a task template fired at due times by whichever worker claims the trigger.

A schedule is one queued trigger of kind ``schedule`` (no task) holding the
template of the tasks it makes and, for a recurring schedule, a cron
expression read in the schedule's time zone. The worker that claims it
creates that due time's task and queues the schedule's next due time in the
same transaction as the claim, so each due time fires once across all
workers, and none is lost to a crash: either the claim, the task and the next
trigger all commit, or none does.

Due times missed while no worker ran are fired one by one when workers come
back (the next due time follows the last one, not the clock); under the
default overlap policy ``skip`` (Temporal's default) a due time whose
previous run is still queued or running makes no task, and says so in an
event of that run. A paused schedule stays queued at `PAUSED_FIRE_AT`, so
no worker claims it; resuming queues its next due time from now, so the due
times it missed while paused are not made up (as Temporal and DBOS do).
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, croniter
from pydantic import BaseModel, ConfigDict

from .errors import InputError, TaskNotFound
from .records import Event, Severity, Task, Trigger, utcnow
from .store import StoreOps
from .trust.seal import SigningKey
from .trust.workspace import workspace_for

__all__ = [
    "OVERLAP_POLICIES",
    "PAUSED_FIRE_AT",
    "SCHEDULE_TRIGGER",
    "Overlap",
    "Schedule",
    "check_cron",
    "check_overlap",
    "check_tz",
    "fire_schedule",
    "new_schedule_id",
    "next_due",
    "pause_schedule",
    "resume_schedule",
    "schedule_trigger",
    "trigger_schedule",
]

SCHEDULE_TRIGGER = "schedule"

Overlap = Literal["skip", "allow"]
OVERLAP_POLICIES: tuple[Overlap, ...] = ("skip", "allow")

# A paused schedule keeps its one queued trigger (its dedupe key, its place in
# `ratchet schedules`) but at a time no worker reaches: the trigger queue needs
# no column of its own for it.
PAUSED_FIRE_AT = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)

# The macros croniter reads; `@reboot` is not one (a schedule has no boot).
CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class Schedule(BaseModel):
    """What a schedule trigger carries: the template, when it repeats, and its state.

    Attributes:
        tz: the IANA time zone its cron expression is read in.
        overlap: ``skip`` makes no task at a due time while the schedule's
            last task is still queued or running; ``allow`` always makes one.
        paused: no due time fires while paused.
        last_task: the id of the last task it made (the run ``skip`` waits for).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    template: Task
    cron: str | None = None
    deadline_seconds: float | None = None
    tz: str = "UTC"
    overlap: Overlap = "skip"
    paused: bool = False
    last_task: str | None = None

    @classmethod
    def from_trigger(cls, trigger: Trigger) -> Schedule:
        return cls.model_validate(trigger.payload)


def new_schedule_id() -> str:
    return f"schedule-{secrets.token_hex(4)}"


def check_overlap(policy: str) -> Overlap:
    """Return `policy` if it is an overlap policy (``skip`` or ``allow``).

    Raises:
        InputError: it is not.
    """
    for known in OVERLAP_POLICIES:
        if policy == known:
            return known
    raise InputError(
        f"overlap {policy!r}: give skip (no run while the last one goes, the default) or allow (always run)"
    )


def check_tz(name: str) -> str:
    """Return `name` if it is an IANA time zone (``Europe/Paris``, ``UTC``).

    Raises:
        InputError: it is not.
    """
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            f"{name!r} is not a time zone; give an IANA name such as Europe/Paris, America/New_York or UTC"
        ) from None
    return name


def check_cron(cron: str, tz: str = "UTC") -> str:
    """Return `cron` if it is a five-field cron expression or a macro (``@daily``) that matches some time.

    Raises:
        InputError: it is not, or it matches no date (``0 0 30 2 *``: February has no 30th).
    """
    macro = cron.strip().lower()
    if macro.startswith("@"):
        if macro not in CRON_MACROS:
            raise InputError(f"{cron!r} is not a cron macro; give one of {', '.join(CRON_MACROS)}")
    elif len(cron.split()) != 5 or not croniter.is_valid(cron):
        raise InputError(
            f"{cron!r} is not a cron expression; give five fields, minute hour day month weekday "
            f"(e.g. '*/5 * * * *' for every five minutes, in the schedule's time zone, {tz}), or a macro "
            "such as @daily"
        )
    next_due(cron, utcnow(), tz)
    return cron


def next_due(cron: str, after: dt.datetime, tz: str = "UTC") -> dt.datetime:
    """The first time `cron`, read in the time zone `tz`, matches strictly after `after` (in UTC).

    Across a daylight-saving change the time is croniter's: a wall-clock time
    the change skips (02:30 in spring) fires at the first time after the gap,
    one it repeats (02:30 in autumn) fires at both of its instants.

    Raises:
        InputError: `cron` is not a cron expression, or matches no time
            (croniter looks ahead 50 years: a date that exists matches within 8).
    """
    try:
        found: dt.datetime = croniter(cron, after.astimezone(ZoneInfo(tz))).get_next(dt.datetime)
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
        fire_at=PAUSED_FIRE_AT if schedule.paused else fire_at,
        priority=schedule.template.priority,
        payload=schedule.model_dump(mode="json"),
        dedupe_key=f"{SCHEDULE_TRIGGER}:{schedule.id}",
    )


def task_id_for(schedule_id: str, due: dt.datetime) -> str:
    return f"{schedule_id}-{due.astimezone(dt.UTC):%Y%m%dT%H%M%SZ}"


async def fire_schedule(tx: StoreOps, trigger: Trigger) -> Task | None:
    """Create the task of a claimed schedule trigger's due time and queue the next one.

    Runs in the transaction that claimed `trigger`. Returns the new task, or
    None when that due time made none: its task exists already, or the
    schedule's last run still goes and its overlap policy is ``skip``.
    """
    schedule = Schedule.from_trigger(trigger)
    due = trigger.fire_at
    if schedule.paused:  # queued at PAUSED_FIRE_AT: only a clock past year 9999 gets here
        await tx.put_trigger(schedule_trigger(schedule, due))
        return None
    created: Task | None = None
    running = await _running_last_task(tx, schedule)
    if running is not None and schedule.overlap == "skip":
        await tx.append_event(
            Event(
                task_id=running.id,
                kind="schedule_skipped",
                severity=Severity.WARNING,
                message=f"schedule {schedule.id}: due time {due.isoformat()} skipped, this task still runs",
                display_message=f"Skipped {schedule.id}'s run due {due:%Y-%m-%d %H:%M:%S} UTC: this one "
                f"is still {running.status_text}",
                data={"schedule": schedule.id, "due": due.isoformat(), "overlap": schedule.overlap},
            )
        )
    else:
        created = await _make_task(tx, schedule, task_id_for(schedule.id, due), due)
        if created is not None:
            schedule = schedule.model_copy(update={"last_task": created.id})
    if schedule.cron is not None:
        await tx.put_trigger(schedule_trigger(schedule, next_due(schedule.cron, due, schedule.tz)))
    return created


async def pause_schedule(tx: StoreOps, schedule_id: str) -> Schedule | None:
    """Pause a schedule: no due time fires until it is resumed. None: no such schedule."""
    changed = await _change(
        tx, schedule_id, lambda schedule, due: (schedule.model_copy(update={"paused": True}), due)
    )
    return None if changed is None else changed[0]


async def resume_schedule(tx: StoreOps, schedule_id: str) -> tuple[Schedule, dt.datetime] | None:
    """Resume a paused schedule from now, and return it with its next due time.

    The due times that passed while it was paused are not made up (as in
    Temporal and DBOS). A schedule that was not paused is left as it was.
    None: no such schedule.
    """

    def resumed(schedule: Schedule, due: dt.datetime) -> tuple[Schedule, dt.datetime]:
        if not schedule.paused:
            return schedule, due
        now = utcnow()
        return schedule.model_copy(update={"paused": False}), (
            now if schedule.cron is None else next_due(schedule.cron, now, schedule.tz)
        )

    return await _change(tx, schedule_id, resumed)


async def trigger_schedule(tx: StoreOps, schedule_id: str) -> Task | None:
    """Make a schedule's task now, once, whatever its overlap policy or pause; None: no such schedule.

    The regular next due time stays as it was. The task becomes the
    schedule's last run, the one a later due time's ``skip`` waits for.
    """
    queued = await _queued(tx, schedule_id)
    if queued is None:
        return None
    schedule = Schedule.from_trigger(queued)
    now = utcnow()
    task_id = f"{schedule.id}-{now:%Y%m%dT%H%M%S%fZ}-now"
    created = await _make_task(tx, schedule, task_id, now)
    if created is None:  # triggered twice in one microsecond: that task is the answer
        return await tx.get_task(task_id)
    await _change(tx, schedule_id, lambda kept, due: (kept.model_copy(update={"last_task": task_id}), due))
    return created


# A worker firing the schedule between our read and our write replaces its
# trigger (a new id): the write then changes nothing, and a second read, in
# this READ COMMITTED transaction, finds the new one.
_CHANGE_TRIES = 5


async def _change(
    tx: StoreOps,
    schedule_id: str,
    change: Callable[[Schedule, dt.datetime], tuple[Schedule, dt.datetime]],
) -> tuple[Schedule, dt.datetime] | None:
    """Apply `change` to the queued schedule (its settings, its next due time); None: no such schedule."""
    for _ in range(_CHANGE_TRIES):
        queued = await _queued(tx, schedule_id)
        if queued is None:
            return None
        schedule, due = change(Schedule.from_trigger(queued), queued.fire_at)
        changed = schedule_trigger(schedule, due).model_copy(update={"id": queued.id})
        if await tx.update_trigger(changed):
            return schedule, changed.fire_at
    raise InputError(f"schedule {schedule_id!r} was being fired by workers all along; try again")


async def _queued(tx: StoreOps, schedule_id: str) -> Trigger | None:
    for trigger in await tx.list_triggers():
        if trigger.kind == SCHEDULE_TRIGGER and trigger.payload.get("id") == schedule_id:
            return trigger
    return None


async def _running_last_task(tx: StoreOps, schedule: Schedule) -> Task | None:
    """The schedule's last task while it is queued, running or waiting; None once it ended (or is gone)."""
    if schedule.last_task is None:
        return None
    try:
        last = await tx.get_task(schedule.last_task)
    except TaskNotFound:
        return None
    return None if last.status.is_terminal else last


async def _make_task(tx: StoreOps, schedule: Schedule, task_id: str, due: dt.datetime) -> Task | None:
    """Create and queue the task `task_id` from the schedule's template; None if it exists."""
    try:
        await tx.get_task(task_id)
    except TaskNotFound:
        pass
    else:
        return None
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
            # Made when due, for whatever code runs then: the worker that starts it gives its version.
            "code_version": None,
        }
    )
    # The template was sealed when the schedule was made; a forged one makes tasks that wait.
    created = SigningKey.from_environment().reseal(template, created)
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
    return created

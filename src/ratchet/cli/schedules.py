"""`ratchet schedules`: list the schedules (`ratchet submit --every`); pause, resume, run or delete one.

Pausing keeps a schedule and its next due time off the workers' queue;
resuming queues its next due time from now, so the due times it missed
while paused are not made up (as Temporal and DBOS do). ``--trigger`` makes
one task now, whatever the schedule's pause or overlap policy, and leaves its
next due time where it was.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Annotated, Any

import typer

from ..errors import InputError
from ..runtime import Runtime
from ..schedules import PAUSED_FIRE_AT, Schedule
from ..store import DEFAULT_STORE_URL, redact_url
from ..views.record_json import iso_time
from . import json_output, render
from .options import ForceOpenOption, JsonOption, StoreOption
from .store_access import open_store_for, run_async

__all__ = ["schedules_command"]


def _id_option(flag: str, help_text: str) -> Any:
    return typer.Option(flag, metavar="ID", help=help_text)


def schedules_command(
    delete: Annotated[
        str | None, _id_option("--delete", "Stop this schedule: no more tasks are made from it.")
    ] = None,
    pause: Annotated[
        str | None,
        _id_option("--pause", "Pause this schedule: no due time makes a task until it is resumed."),
    ] = None,
    resume: Annotated[
        str | None,
        _id_option(
            "--resume", "Resume this paused schedule from now; the due times it missed are not made up."
        ),
    ] = None,
    trigger: Annotated[
        str | None,
        _id_option(
            "--trigger",
            "Make this schedule's task now, once (even paused, even while its last run goes); "
            "its next due time stays.",
        ),
    ] = None,
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    as_json: JsonOption = False,
) -> None:
    """List the schedules (`ratchet submit --every`), soonest due first; or act on one.

    One of --pause, --resume, --trigger or --delete at a time.
    """
    chosen = {
        flag: value
        for flag, value in [
            ("--delete", delete),
            ("--pause", pause),
            ("--resume", resume),
            ("--trigger", trigger),
        ]
        if value is not None
    }
    if len(chosen) > 1:
        raise InputError(f"give one of {', '.join(chosen)} at a time")
    if chosen:
        [(flag, schedule_id)] = chosen.items()
        _act(flag, schedule_id, store, as_json)
        return
    found = run_async(_list(store))
    if as_json:
        json_output.print_json([json_output.schedule_json(schedule, due) for schedule, due in found])
        return
    if not found:
        render.print_line(f"no schedules in {redact_url(store)}")
        return
    render.print_schedules(found)


def _act(flag: str, schedule_id: str, store: str, as_json: bool) -> None:
    unknown = InputError(
        f"no schedule {schedule_id!r} in {redact_url(store)}; `ratchet schedules` lists them"
    )
    if flag == "--delete":
        if not run_async(_delete(store, schedule_id)):
            raise unknown
        render.print_line(f"schedule {schedule_id} deleted; the tasks it made are kept")
    elif flag == "--trigger":
        task_id = run_async(_trigger(store, schedule_id))
        if task_id is None:
            raise unknown
        if as_json:
            json_output.print_json_line({"schedule_id": schedule_id, "task_id": task_id})
            return
        print(task_id)
        print(
            f"schedule {schedule_id}: task queued to start now; its next due time stays as it was "
            f"(`{render.command('show', task_id, store_url=store)}` shows the task)",
            file=sys.stderr,
        )
    else:
        changed = run_async(_pause(store, schedule_id) if flag == "--pause" else _resume(store, schedule_id))
        if changed is None:
            raise unknown
        schedule, due = changed
        if as_json:
            json_output.print_json_line(json_output.schedule_json(schedule, due))
        elif schedule.paused:
            render.print_line(
                f"schedule {schedule_id} paused; no due time makes a task until "
                f"`{render.command('schedules', '--resume', schedule_id, store_url=store)}`"
            )
        else:
            render.print_line(
                f"schedule {schedule_id} resumed; next due {iso_time(due)}; "
                "due times missed while paused are not made up"
            )


async def _list(url: str) -> list[tuple[Schedule, dt.datetime]]:
    async with open_store_for(url, create=False) as store:
        return sorted(await Runtime(store).schedules(), key=lambda found: found[1])


async def _delete(url: str, schedule_id: str) -> bool:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store).unschedule(schedule_id)


async def _pause(url: str, schedule_id: str) -> tuple[Schedule, dt.datetime] | None:
    async with open_store_for(url, create=False) as store:
        paused = await Runtime(store).pause_schedule(schedule_id)
        return None if paused is None else (paused, PAUSED_FIRE_AT)


async def _resume(url: str, schedule_id: str) -> tuple[Schedule, dt.datetime] | None:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store).resume_schedule(schedule_id)


async def _trigger(url: str, schedule_id: str) -> str | None:
    async with open_store_for(url, create=False) as store:
        return await Runtime(store).trigger_schedule(schedule_id)

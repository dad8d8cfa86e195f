"""The `Runtime`'s schedules: make tasks at the times a cron expression matches, and manage them.

`ScheduleMethods` is part of `Runtime`; it reaches the rest of the runtime
through `_Host`. The schedule itself (its trigger, due times, pausing) is
`ratchet.schedules`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol

from ..agent import Agent
from ..engine.workflow import Workflow
from ..errors import InputError
from ..limits import PRIORITY_DEFAULT
from ..policy import MAX_DURATION, Budget
from ..records import Task, Trigger, utcnow
from ..schedules import (
    SCHEDULE_TRIGGER,
    Overlap,
    Schedule,
    check_cron,
    check_overlap,
    check_tz,
    new_schedule_id,
    next_due,
    pause_schedule,
    resume_schedule,
    schedule_trigger,
    trigger_schedule,
)
from ..store import StateStore

__all__ = ["ScheduleMethods"]

# `approval_timeout` not given: the task takes the runtime's (`Runtime._new_task`).
_UNSET: Any = object()


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    def _new_task(
        self,
        workflow: Workflow | Agent | str,
        inputs: Mapping[str, Any] | None,
        **options: Any,
    ) -> Task: ...


class ScheduleMethods:
    """`Runtime.schedule` and the verbs that manage a schedule."""

    async def schedule(
        self: _Host,
        workflow: Workflow | Agent | str,
        inputs: Mapping[str, Any] | None = None,
        *,
        every: str,
        name: str | None = None,
        instruction: str = "",
        model: str | None = None,
        deadline: float | None = None,
        budget: Budget | None = None,
        schedule_id: str | None = None,
        approval_timeout: float | None = _UNSET,
        priority: int = PRIORITY_DEFAULT,
        tz: str = "UTC",
        overlap: Overlap = "skip",
        labels: Mapping[str, str] | None = None,
    ) -> Trigger:
        """Make a task for `workflow` at every time the cron expression `every` matches in `tz`.

        Workers fire each due time once: the task ``<schedule id>-<time>``
        (the time in UTC) is created and queued. Returns the schedule's
        queued trigger (its ``payload["id"]`` is the schedule id,
        ``fire_at`` the first due time).

        Args:
            every: five cron fields, or a macro (``@hourly``, ``@daily``,
                ``@weekly``, ``@monthly``, ``@yearly``).
            deadline: seconds each task may run, from its creation.
            tz: the IANA time zone `every` is read in (``Europe/Paris``);
                daylight-saving changes are croniter's.
            labels: every task made gets these (`Runtime.submit`).
            overlap: ``skip`` (the default, as Temporal's) makes no task at a
                due time while the schedule's last task is still queued or
                running, and says so in an event of that task; ``allow``
                always makes one.

        Raises:
            InputError: `every` is not a cron expression or macro, or never
                matches; `tz` is not a time zone; `overlap` is neither
                ``skip`` nor ``allow``; the instruction is not UTF-8 text or
                is too large; the deadline is not a number of seconds up to
                100 years.
        """
        check_tz(tz)
        check_cron(every, tz)
        check_overlap(overlap)
        if deadline is not None and not 0 < deadline <= MAX_DURATION:
            raise InputError(f"deadline {deadline!r}: give seconds from a task's creation, up to 100 years")
        schedule_id = schedule_id or new_schedule_id()
        options = {} if approval_timeout is _UNSET else {"approval_timeout": approval_timeout}
        template = self._new_task(
            workflow,
            inputs,
            name=name,
            instruction=instruction,
            model=model,
            deadline=None,
            budget=budget,
            task_id=schedule_id,
            priority=priority,
            labels=labels,
            **options,
        )
        plan = Schedule(
            id=schedule_id, template=template, cron=every, deadline_seconds=deadline, tz=tz, overlap=overlap
        )
        return await self.store.put_trigger(schedule_trigger(plan, next_due(every, utcnow(), tz)))

    async def unschedule(self: _Host, schedule_id: str) -> bool:
        """Stop a schedule: no more tasks are made from it. Returns whether it existed."""
        for trigger in await self.store.list_triggers():
            if trigger.kind == SCHEDULE_TRIGGER and trigger.payload.get("id") == schedule_id:
                return await self.store.delete_trigger(trigger.id)
        return False

    async def pause_schedule(self: _Host, schedule_id: str) -> Schedule | None:
        """Pause a schedule: no due time fires until it is resumed. None: no such schedule."""
        async with self.store.transaction() as tx:
            return await pause_schedule(tx, schedule_id)

    async def resume_schedule(self: _Host, schedule_id: str) -> tuple[Schedule, dt.datetime] | None:
        """Resume a paused schedule from now (missed due times are not made up); None: no such schedule.

        Returns the schedule and its next due time.
        """
        async with self.store.transaction() as tx:
            return await resume_schedule(tx, schedule_id)

    async def trigger_schedule(self: _Host, schedule_id: str) -> str | None:
        """Make a schedule's task now, once; its next due time stays. None: no such schedule.

        Returns the new task's id. An operator's explicit request: it runs even while the schedule is
        paused or its last run still goes.
        """
        async with self.store.transaction() as tx:
            made = await trigger_schedule(tx, schedule_id)
        return None if made is None else made.id

    async def schedules(self: _Host) -> list[tuple[Schedule, dt.datetime]]:
        """Every schedule, with its next due time (`PAUSED_FIRE_AT` while paused), soonest first."""
        return [
            (Schedule.from_trigger(trigger), trigger.fire_at)
            for trigger in await self.store.list_triggers()
            if trigger.kind == SCHEDULE_TRIGGER
        ]

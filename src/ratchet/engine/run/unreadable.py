"""Setting aside a task whose stored rows cannot be read, so that workers go on with the others.

A worker that meets such a task (`CorruptRecord` while it takes it up) parks
it: a ``recheck`` trigger of the task, due some minutes later, and an event
on the task saying what is wrong (events are rows of their own, so they can
still be written and read). No worker claims a task that has a trigger
queued, so the task is not taken again and again; when the trigger fires, a
worker looks at the task once more: it runs if its rows were repaired
meanwhile, and is parked again if not. ``ratchet resume`` after a repair runs
it at once (a run removes the task's triggers).
"""

from __future__ import annotations

import datetime as dt

from ...errors import CorruptRecord
from ...records import Event, Severity, Trigger, utcnow
from ...store import StateStore

__all__ = ["RECHECK_TRIGGER", "UNREADABLE_EVENT", "set_aside_unreadable"]

RECHECK_TRIGGER = "recheck"
UNREADABLE_EVENT = "task_unreadable"


async def set_aside_unreadable(
    store: StateStore, task_id: str, problem: CorruptRecord, *, recheck_in: float
) -> bool:
    """Park the task until `recheck_in` seconds from now, with an event naming `problem`.

    Returns whether the event is new: the same problem, already the task's
    last event (a recheck found it unrepaired), is not recorded again.
    """
    message = f"set aside: {problem.message}"
    async with store.transaction() as tx:
        last = await tx.last_events(task_id, 1)
        new = not (last and last[-1].kind == UNREADABLE_EVENT and last[-1].message == message)
        if new:
            await tx.append_event(
                Event(
                    task_id=task_id,
                    kind=UNREADABLE_EVENT,
                    severity=Severity.ERROR,
                    message=message,
                    display_message=f"Set aside: {problem.what} cannot be read ({problem.problem})",
                    data={"table": problem.table, "key": list(problem.key), "problem": problem.problem},
                )
            )
        recheck_at = utcnow() + dt.timedelta(seconds=recheck_in)
        await tx.put_trigger(Trigger(kind=RECHECK_TRIGGER, task_id=task_id, fire_at=recheck_at))
    return new

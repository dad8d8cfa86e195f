"""Validate before resume: a task left alone longer than its checkpoint policy trusts is set aside.

A task's checkpoint policy may give a ``max_age`` in seconds (the workflow's
`CheckpointPolicy`, or an agent's own, recorded with the task). Whenever a
task that already ran is taken up again (a worker adopting it after its
holder died, a timer or a person's decision waking it, ``ratchet resume``,
`Runtime.resume`), its age is measured first:

- a task with a checkpoint: the age of its newest checkpoint;
- a task without one: the time since its last progress, the latest of its
  last recorded operation (when it finished, or started if it never did),
  its last event and its last change (``updated_at``).

Older than ``max_age``, it is not resumed: the world it was working in may
have moved on. It is set aside as ``waiting(stale)`` with a ``task_stale``
event that says how old it is and how to force it. Workers never claim it,
so none spins on it; it stays aside until a person looks and runs
``ratchet resume TASK --force`` (`Runtime.resume(force=True)`).

A task that never started (queued, or due later) is started, not resumed:
it is not judged. Time spent waiting counts like any other time: a task that
sleeps, backs off or waits for a person longer than ``max_age`` is stale when
it wakes, so give ``max_age`` more than the longest wait you expect.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from ...policy import CheckpointPolicy
from ...records import Event, Lease, Severity, Task, WaitReason, utcnow
from ...store import StateStore
from .code_wait import set_aside

__all__ = ["STALE_EVENT", "Staleness", "judge_staleness", "last_progress", "set_aside_stale", "stale_message"]

STALE_EVENT = "task_stale"

log = logging.getLogger("ratchet.engine")


@dataclass(frozen=True)
class Staleness:
    """How old a task is, against what its policy trusts, and from what its age is measured."""

    age: float
    max_age: float
    since: str
    at: dt.datetime
    checkpoint: int | None

    def explain(self, task_id: str) -> str:
        """Why the task is not resumed, and what a person does about it."""
        return (
            f"{self.since} is {self.age:.0f} s old, more than the {self.max_age:g} s its checkpoint "
            f"policy trusts (max_age); check that what it was doing still makes sense "
            f"(`ratchet show {task_id}`), then `ratchet resume {task_id} --force`"
        )


async def last_progress(store: StateStore, task: Task) -> dt.datetime:
    """When the task last moved: its last operation, its last event or its last change, the latest."""
    times = [task.updated_at]
    if task.started_at is not None:
        times.append(task.started_at)
    times.extend(op.finished_at or op.started_at for op in await store.list_ops(task.id))
    times.extend(event.time for event in await store.last_events(task.id, 1))
    return max(times)


async def judge_staleness(
    store: StateStore, task: Task, policy: CheckpointPolicy, *, now: dt.datetime | None = None
) -> Staleness | None:
    """How stale `task` is, if it is older than `policy.max_age`; None when it may be resumed."""
    if policy.max_age is None or task.started_at is None:
        return None
    latest = await store.latest_checkpoint(task.id)
    if latest is not None:
        at, number = latest.created_at, latest.number
        since = f"its newest checkpoint (number {number})"
    else:
        at, number = await last_progress(store, task), None
        since = "its last progress (it has no checkpoint)"
    age = ((now or utcnow()) - at).total_seconds()
    if age <= policy.max_age:
        return None
    return Staleness(age=age, max_age=policy.max_age, since=since, at=at, checkpoint=number)


async def set_aside_stale(store: StateStore, task: Task, lease: Lease, stale: Staleness) -> Task:
    """Set `task` aside as ``waiting(stale)``, with an event saying why and how to force it; return it."""
    why = stale.explain(task.id)
    log.warning("task %s: set aside, not resumed: %s", task.id, why)
    event = Event(
        task_id=task.id,
        kind=STALE_EVENT,
        severity=Severity.ERROR,
        message=f"set aside: {why}",
        display_message=(
            f"Set aside: {stale.since} is {stale.age:.0f} s old (max_age {stale.max_age:g} s); "
            f"`ratchet resume {task.id} --force` resumes it"
        ),
        data={
            "age": stale.age,
            "max_age": stale.max_age,
            "since": stale.at.isoformat(),
            "checkpoint": stale.checkpoint,
        },
    )
    return await set_aside(store, task, lease, WaitReason.STALE, event)


async def stale_message(store: StateStore, task: Task) -> str:
    """What `CannotResume` says of a task set aside as stale: its ``task_stale`` event, in one line."""
    said = [e for e in await store.last_events(task.id, 20) if e.kind == STALE_EVENT][-1:]
    if said:
        return f"task {task.id} is {said[0].message}"
    return (
        f"task {task.id} is set aside: it was too old to resume by itself; check it "
        f"(`ratchet show {task.id}`), then `ratchet resume {task.id} --force`"
    )

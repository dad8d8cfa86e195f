"""A task id names one task: starting a task under an id that exists returns that task.

``rt.run(wf, inputs, task_id="order-42")``, ``rt.submit(...)`` and ``ratchet
submit --task-id`` are idempotent, as DBOS's workflow ids are: the first
makes the task, and every later start under the same id finds it instead of
making a second one or failing. So a script that names its task can simply
be run again: killed midway, its next run resumes the task (`Runtime.run`
resumes one that has not ended); finished, or waiting on a person, its next
run gets it as it stands (`stands_as_it_is`).

The existing task is returned whatever inputs the later start gave (DBOS
does the same): the id, not the inputs, says which task it is. A task of
another workflow (or another agent) under that id is a different task: that
start is refused, in one line, rather than handing back a task of code the
caller did not name.
"""

from __future__ import annotations

import datetime as dt

from ..engine.task_spec import AGENT_LOOP
from ..errors import DuplicateRecord, InputError, TaskNotFound
from ..records import Event, Task, Trigger, WaitReason, utcnow
from ..store import StateStore

__all__ = ["create_or_find", "stands_as_it_is"]


async def create_or_find(
    store: StateStore, task: Task, *, queue: bool, at: dt.datetime | None
) -> tuple[Task, bool]:
    """Store `task` (queued for workers if `queue`, from `at`), unless a task has its id already.

    Returns the task stored, and whether this call made it. Two processes
    starting the same id at once make one task: the one whose write loses
    finds the other's.

    Raises:
        InputError: the task under that id is of another workflow or agent.
    """
    existing = await _find(store, task.id)
    if existing is None:
        try:
            async with store.transaction() as tx:
                await tx.create_task(task)
                if queue:
                    await tx.put_trigger(Trigger(kind="start", task_id=task.id, fire_at=at or utcnow()))
                await tx.append_event(
                    Event(
                        task_id=task.id,
                        kind="task_created",
                        message=f"task created: {task.name}",
                        display_message=f"Created {task.name}",
                        data={"workflow": task.workflow},
                    )
                )
            return task, True
        except DuplicateRecord:  # made meanwhile by another process
            existing = await store.get_task(task.id)
    _check_same_code(existing, task)
    return existing, False


def stands_as_it_is(task: Task) -> bool:
    """Whether `Runtime.run` returns an existing `task` as it is: it ended, or waits for a person's
    decision (an approval, an answer, an in-doubt call), which no run can make for them."""
    return task.status.is_terminal or (
        task.waiting_on is not None
        and task.waiting_on.needs_person
        and task.waiting_on not in (WaitReason.CODE, WaitReason.STALE)
    )


async def _find(store: StateStore, task_id: str) -> Task | None:
    try:
        return await store.get_task(task_id)
    except TaskNotFound:
        return None


def _check_same_code(existing: Task, wanted: Task) -> None:
    if existing.workflow == wanted.workflow and existing.agent == wanted.agent:
        return
    what = f"agent {existing.agent}" if existing.workflow == AGENT_LOOP else f"workflow {existing.workflow}"
    raise InputError(
        f"task id {existing.id!r} is taken by a task of {what}: one id names one task; "
        "give this one another task_id"
    )

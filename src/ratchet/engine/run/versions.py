"""A task that started on another version of its code than the one here: run it, or leave it.

A task records the version of the code it started on
(`ratchet.engine.code_version`). A worker whose version for it differs does
not run it on a guess: what a task journaled under one version may not
replay under another, and a mismatch found mid-run leaves a half-done step.
It either

- runs it, when it allows compatible versions and a replay check of the
  task's journal against the code here passes (`replay_check_task`): the
  task's version becomes this worker's, with an event naming both, and its
  journal goes on under the new code; or
- leaves it for a worker of its version: ``waiting(code)``, with an event
  naming both versions and what to do. Workers look at the tasks waiting for
  their code while they run (`Worker`), so a worker of the task's version
  takes it up without a person; one that declined it does not try again.

As DBOS does with its application versions, a task is never moved to new
code silently; unlike a queue routed by version, a person sees at once, in
the task's status, that it waits and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...errors import LeaseLost, StoreError
from ...records import Event, Lease, Severity, Task, WaitReason
from ...store import StateStore
from ...trust.code import CodeTrust
from ..replay import ReplayOutcome, replay_check_task
from ..workflow import Workflow
from .code_wait import set_aside

__all__ = ["VERSION_EVENT", "VERSION_MOVED_EVENT", "settle_version"]

VERSION_EVENT = "code_version"
VERSION_MOVED_EVENT = "code_version_moved"

log = logging.getLogger("ratchet.engine")


async def settle_version(
    store: StateStore,
    task: Task,
    lease: Lease,
    mine: str,
    *,
    compatible: bool,
    load: Callable[[str], Workflow],
    trust: CodeTrust | None,
) -> tuple[Task, bool]:
    """Decide whether `task` runs here, on code of version `mine`; return it as it now is, and whether.

    A task without a version (made before versions were kept, or by a
    schedule) takes `mine` if it has not started yet, and runs; so does one
    of version `mine`. Otherwise see the module's docstring.
    """
    if task.code_version == mine:
        return task, True
    if task.code_version is None:
        if task.started_at is not None:  # it ran before versions were kept: it runs as it did
            return task, True
        return task.model_copy(update={"code_version": mine}), True
    if not compatible:
        why = "this worker does not allow compatible versions"
        also = (
            "or allow compatible versions (--compatible-versions of ratchet worker, resume or retry) "
            "to run it once its journal replays"
        )
        return await _leave(store, task, lease, mine, why, also), False
    outcome = await _replay_check(store, task.id, load, trust)
    if outcome.ok:
        return await _move(store, task, lease, mine, outcome), True
    why = f"this worker allows compatible versions, but {_not_replaying(outcome)}"
    found = outcome.divergence
    also = "" if found is None else f"or make this code replay it: {found.fix}"
    return await _leave(store, task, lease, mine, why, also), False


async def _replay_check(
    store: StateStore, task_id: str, load: Callable[[str], Workflow], trust: CodeTrust | None
) -> ReplayOutcome:
    """The replay check of the task; one that cannot be made is an outcome with a problem, not a crash."""
    try:
        return await replay_check_task(store, task_id, load=load, trust=trust)
    except (StoreError, LeaseLost):
        raise
    except Exception as error:  # the task must not spin through the worker's error path: it waits
        return ReplayOutcome(task_id=task_id, replayed=0, problem=f"{type(error).__name__}: {error}")


def _not_replaying(outcome: ReplayOutcome) -> str:
    if outcome.divergence is not None:
        found = outcome.divergence
        return (
            f"its journal does not replay here: at seq {found.seq} it recorded {found.recorded}, "
            f"this code asks for {found.requested}"
        )
    return f"its replay check could not be made: {outcome.problem}"


async def _move(store: StateStore, task: Task, lease: Lease, mine: str, outcome: ReplayOutcome) -> Task:
    theirs = task.code_version
    moved = task.model_copy(update={"code_version": mine})
    event = Event(
        task_id=task.id,
        kind=VERSION_MOVED_EVENT,
        message=f"its journal replays on code version {mine} ({outcome.replayed} operation(s) checked): "
        f"it started on version {theirs} and goes on under {mine}",
        display_message=f"Moved from code version {theirs} to {mine}: its journal replays",
        data={"from": theirs, "to": mine, "replayed": outcome.replayed},
    )
    async with store.transaction(fence=lease) as tx:
        await tx.update_task(moved)
        await tx.append_event(event)
    log.info("task %s: moved from code version %s to %s", task.id, theirs, mine)
    return moved


async def _leave(store: StateStore, task: Task, lease: Lease, mine: str, why: str, also: str) -> Task:
    """Set `task` aside for a worker of its version: the event says `why` not here, and what `also` helps."""
    theirs = task.code_version
    message = (
        f"it started on code version {theirs} and this worker runs version {mine} ({why}): "
        f"start a worker of version {theirs} (the code it started on, or RATCHET_CODE_VERSION={theirs})"
        + (f", {also}" if also else "")
    )
    log.info("task %s: left for a worker of code version %s (this one runs %s)", task.id, theirs, mine)
    if task.waiting_on is WaitReason.CODE:  # said already, by this or another worker of this version
        last = await store.last_events(task.id, 1)
        if last and last[0].kind == VERSION_EVENT and last[0].message == message:
            return task
    event = Event(
        task_id=task.id,
        kind=VERSION_EVENT,
        severity=Severity.WARNING,
        message=message,
        display_message=f"Waiting for a worker of code version {theirs} (this one runs {mine})",
        data={"error": "CodeVersionDiffers", "task_version": theirs, "worker_version": mine},
    )
    return await set_aside(store, task, lease, WaitReason.CODE, event)

"""A task whose code or workspace cannot be used here waits for it: ``waiting(code)``.

Its code may be refused (outside the project root, installed packages and
``--allow-code``), missing (the project moved without it, a module is not
installed) or broken (it fails to import); its recorded workspace may lie
outside the workspace root. None of these is the task's failure: an operator
puts the code in place or admits it, then ``ratchet resume`` runs it, and so
does a worker started with the code (or the allowance).

A waiting task is not claimed by workers (it waits on a person), so a worker
never spins on it; each worker tries each such task once while it runs (when
it starts, or when it first sees the task waiting).

A task whose code references do not hold their seal (made before seals, with
another key, or changed in the database) waits the same way; an operator who
has looked at them seals them again (`reseal`, ``ratchet resume --seal``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...errors import CodeRefused, CodeUnavailable, WorkspaceRefused
from ...records import Event, Lease, Severity, Task, TaskStatus, WaitReason
from ...store import StateStore
from ...trust.seal import SigningKey
from ..workflow import Workflow, load_workflow

__all__ = ["CODE_EVENT_KINDS", "reseal", "set_aside", "wait_for_code"]

# "code_version": it started on another version of its code than a worker's (run/versions.py).
CODE_EVENT_KINDS = frozenset({"code_refused", "code_missing", "code_version"})

log = logging.getLogger("ratchet.engine")


async def wait_for_code(store: StateStore, task: Task, lease: Lease, problem: CodeUnavailable) -> Task:
    """Set `task` aside as ``waiting(code)`` with an event naming `problem`; return it.

    A task already waiting for the same reason is left as it is (no second
    event): a worker starting again, or a resume before the code is back,
    adds nothing new.
    """
    log.info("task %s: waits for its code: %s", task.id, problem.message)
    refused = isinstance(problem, (CodeRefused, WorkspaceRefused))
    kind = "code_refused" if refused else "code_missing"
    if task.waiting_on is WaitReason.CODE:
        last = [e for e in await store.last_events(task.id, 5) if e.kind in CODE_EVENT_KINDS][-1:]
        if last and last[0].message == problem.message:
            return task
    event = Event(
        task_id=task.id,
        kind=kind,
        severity=Severity.ERROR,
        message=problem.message,
        display_message=f"Waiting for its code: {problem.message}",
        data={"error": type(problem).__name__},
    )
    return await set_aside(store, task, lease, WaitReason.CODE, event)


async def set_aside(store: StateStore, task: Task, lease: Lease, reason: WaitReason, event: Event) -> Task:
    """Make `task` wait on a person for `reason`, with `event` saying why; return it.

    Its queued wake-ups are dropped: only a person (or a worker's one look
    when it starts, for code) takes it up again.
    """
    # A queued task never ran: it is moved to running first, as the status machine has it.
    started = task.transition(TaskStatus.RUNNING) if task.status is TaskStatus.QUEUED else task
    waiting = started.transition(TaskStatus.WAITING, waiting_on=reason)
    async with store.transaction(fence=lease) as tx:
        if started is not task:
            await tx.update_task(started)
        await tx.update_task(waiting)
        await tx.delete_triggers(task.id)
        await tx.append_event(event)
    return waiting


async def reseal(
    store: StateStore, task_id: str, key: SigningKey, load: Callable[[str], Workflow] = load_workflow
) -> Task:
    """Seal task `task_id`'s code references as they stand, for an operator who has checked them.

    The workflow is loaded (under the code trust the caller enforces) to
    learn which inputs it reads code from; the seal covers those. A
    ``code_sealed`` event records what was sealed.

    Raises:
        TaskNotFound: no such task.
        CodeUnavailable: its workflow is refused here or does not load.
    """
    task = await store.get_task(task_id)
    workflow = load(task.workflow or "")
    sealed = key.seal(task, workflow.code_inputs)
    covered = ", ".join(name for name in workflow.code_inputs if name in task.inputs_params) or "none"
    async with store.transaction() as tx:
        await tx.update_task(sealed)
        await tx.append_event(
            Event(
                task_id=task_id,
                kind="code_sealed",
                message=f"its code references were sealed by an operator: workflow {task.workflow}, "
                f"model {task.model or 'none'}, workspace {task.workspace or 'none'}, inputs {covered}",
                data={"key": key.where},
            )
        )
    return sealed

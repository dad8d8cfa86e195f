"""What a replay check reads of one task, in one read of its store, and the copy it replays on.

The check reads the task, its journal, its steps, the child tasks its
journal started (a wait on one reads it) and the artifacts its large tool
results were set aside in (a replay reads them back); it writes nothing
there. It copies them into a `ReplayStore` of its own, where the run's
writes (its events, steps, checkpoints) land and are dropped with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...records import Artifact, Lease, Operation, OpKind, OpStatus, Step, Task, TaskStatus
from ...store import StateStore
from ..journal.large_results import stored_result
from .frontier import ReplayStore

__all__ = ["Recorded", "read_recorded", "replay_copy"]

# The copy's lease never expires while a check runs: no heartbeat renews it, and nothing else claims it.
COPY_LEASE_TTL = 24 * 3600.0


@dataclass(frozen=True)
class Recorded:
    """One task as its store holds it, with what its replay reads."""

    task: Task
    ops: list[Operation]
    steps: list[Step]
    children: list[Task]
    artifacts: list[tuple[Artifact, bytes]]


async def read_recorded(store: StateStore, task_id: str) -> Recorded:
    """Read task `task_id` and what its replay reads, in one consistent read.

    Raises:
        TaskNotFound: no task has that id.
        CorruptRecord: its record cannot be read.
    """
    async with store.reading() as tx:
        task = await tx.get_task(task_id)
        ops = await tx.list_ops(task_id)
        steps = await tx.list_steps(task_id) if ops else []
        started = [op.output for op in ops if op.kind is OpKind.CHILD and op.name == "start_child"]
        child_ids = [str(out["child_id"]) for out in started if isinstance(out, dict) and "child_id" in out]
        children = await tx.get_tasks(child_ids) if child_ids else []
        artifacts = []
        for op in ops:
            aside = stored_result(op)
            if aside is not None:
                artifact = await tx.get_artifact(aside.artifact_id)
                artifacts.append((artifact, await tx.read_artifact(aside.artifact_id)))
    return Recorded(task, ops, steps, children, artifacts)


async def replay_copy(recorded: Recorded) -> tuple[ReplayStore, Task, Lease]:
    """A `ReplayStore` holding `recorded`, guarding from now on; the task as it runs there, and its lease.

    The task runs there as `running` whatever its status: a run that ended
    is replayed as it ran.
    """
    copy = ReplayStore()
    task = recorded.task
    running = task.model_copy(update={"status": TaskStatus.RUNNING, "waiting_on": None})
    async with copy.transaction() as tx:
        await tx.create_task(running)
        for child in recorded.children:
            await tx.create_task(child)
        if recorded.steps:
            await tx.replace_steps(task.id, recorded.steps)
        for op in recorded.ops:
            if op.status is OpStatus.STARTED:
                await tx.record_op_started(op)
            else:
                await tx.record_op_finished(op)
        for artifact, body in recorded.artifacts:
            await tx.put_artifact(artifact, body)
    lease = await copy.claim_lease(task.id, "replay-check", COPY_LEASE_TTL)
    assert lease is not None  # no one else holds a lease in a store made a moment ago
    copy.frontier_ops.guarding = True
    return copy, running, lease

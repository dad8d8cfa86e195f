"""Forking: a new task started from one of a task's checkpoints (``ratchet fork``)."""

from __future__ import annotations

import uuid

from ..model import Event, OpStatus, Task, TaskStatus, Trigger, utcnow
from ..store import StateStore

__all__ = ["fork_task"]


async def fork_task(store: StateStore, task_id: str, checkpoint: int) -> str:
    """Start a new task from one of a task's checkpoints; the original is not touched.

    The new task gets the original's journal up to the checkpoint, so it
    replays that far and runs live from there. It keeps the original's
    budget but not its deadline (an absolute time, likely past) nor its
    workspace.
    """
    saved = await store.get_checkpoint(task_id, checkpoint)
    original = await store.get_task(task_id)
    new_id = f"{task_id}-fork{checkpoint}-{uuid.uuid4().hex[:6]}"
    now = utcnow()
    forked = original.model_copy(
        update={
            "id": new_id,
            "status": TaskStatus.QUEUED,
            "waiting_on": None,
            "result": None,
            "error": None,
            "state": saved.state,
            "forked_from": task_id,
            "created_at": now,
            "updated_at": now,
            "started_at": None,
            "workspace": None,
            "deadline": None,
            "write_mark": None,
        }
    )
    ops = [op for op in await store.list_ops(task_id) if op.seq <= saved.last_seq]
    async with store.transaction() as tx:
        await tx.create_task(Task.model_validate(forked.model_dump()))
        await tx.replace_steps(new_id, [s.model_copy(update={"task_id": new_id}) for s in saved.steps])
        for op in ops:
            copy = op.model_copy(update={"task_id": new_id})
            if op.status is OpStatus.STARTED:
                await tx.record_op_started(copy)
            else:
                await tx.record_op_finished(copy)
        await tx.put_trigger(Trigger(kind="start", task_id=new_id, dedupe_key=f"{new_id}:start"))
        await tx.append_event(
            Event(
                task_id=new_id,
                kind="task_forked",
                message=f"forked from task {task_id} at checkpoint {checkpoint} (operation {saved.last_seq})",
                data={"from": task_id, "checkpoint": checkpoint, "last_seq": saved.last_seq},
            )
        )
    return new_id

"""``ctx.apply_patch``: a run's own changes to its agent state, journaled (part of `Context`)."""

from __future__ import annotations

from typing import Any, Protocol

from ...errors import NonDeterminismError
from ...policy import CheckpointStrategy
from ...records import AgentState, Event, Lease, Operation, OpKind, OpStatus, StatePatch, Task, utcnow
from ...store import StateStore
from ..budget import BudgetTracker
from ..journal import Journal
from ..queued_patches import OutsidePatch, outside_view
from ..workflow import Workflow

__all__ = ["StatePatches"]


class _Owner(Protocol):
    store: StateStore
    lease: Lease
    journal: Journal
    budget: BudgetTracker
    workflow: Workflow
    state: AgentState
    task: Task

    @property
    def task_id(self) -> str: ...

    def _take_seq(self, count: int = 1) -> int: ...

    def _step_meta(self) -> dict[str, Any]: ...

    async def take_outside_patches(self) -> list[OutsidePatch]: ...

    async def checkpoint(self) -> object: ...


class StatePatches:
    """Changes a run makes to its own agent state, each an operation of the journal."""

    async def apply_patch(self: _Owner, patch: StatePatch | dict[str, Any]) -> AgentState:
        """Change the agent state; journaled, so a resume rebuilds the same state.

        Patches sent from outside (engine/queued_patches.py) are taken first: this one applies after them.
        """
        patch = StatePatch.model_validate(patch)
        await self.take_outside_patches()
        seq = self._take_seq()
        recorded = self.journal.lookup(seq)
        if recorded is not None:
            if recorded.kind is not OpKind.STATE:
                raise NonDeterminismError(
                    self.task_id, seq, f"{recorded.kind} {recorded.name}", "state apply_patch"
                )
            self.state = StatePatch.model_validate(recorded.input).apply(self.state)
            return self.state
        new_state = patch.apply(self.state)
        op = Operation(
            task_id=self.task_id,
            seq=seq,
            kind=OpKind.STATE,
            name="apply_patch",
            idempotency_key=f"{self.task_id}:{seq}",
            status=OpStatus.SUCCEEDED,
            input=patch.model_dump(mode="json"),
            meta=self._step_meta(),
            finished_at=utcnow(),
        )
        task = self.task.model_copy(
            update={"state": new_state, "updated_at": utcnow(), "cost": self.budget.cost}
        )
        ops = ", ".join(o.op for o in patch.ops)
        async with self.store.transaction(fence=self.lease) as tx:
            await tx.record_op_finished(op)
            task = await outside_view(tx, task, new_state)
            await tx.update_task(task)
            await tx.append_event(
                Event(
                    task_id=self.task_id,
                    kind="state",
                    message=f"state changed: {ops}",
                    data={"seq": seq, "patch": op.input},
                )
            )
        self.journal.recorded[seq] = op
        self.state, self.task = new_state, task
        if self.workflow.checkpoint.strategy is CheckpointStrategy.ON_STATE_CHANGE:
            await self.checkpoint()
        return self.state

"""Child tasks: a workflow starts other tasks and waits for their results.

``ctx.start_child`` makes the child task and journals its id in one
transaction, at the seq it took: a replay returns the recorded id and never
makes a second child (the id is the parent's id and that seq). ``ctx.wait_child``
journals the child's outcome (its result or error, and what it spent) once it
has ended; until then the parent waits, ``waiting(children)``, holding no
worker: the transaction that ends the child puts a trigger that wakes it
(`wake_parent`). Budgets nest: a child gets at most what its parent has left,
and what it spent counts toward its parent's budget when the parent collects it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import JsonValue

from ..errors import BudgetExceeded, NonDeterminismError, OperationFailed
from ..policy import Budget
from ..records import Event, Lease, Operation, OpKind, OpStatus, Task, TaskStatus, Trigger, WaitReason, utcnow
from ..store import StateStore, StoreOps
from .budget import BudgetTracker
from .calls import TaskSuspended, step_meta
from .journal import Journal
from .task_spec import AgentLike, new_task
from .workflow import Workflow

__all__ = ["Child", "ChildTasks", "child_spending", "wake_parent"]

Target = Workflow | AgentLike | str


@dataclass(frozen=True)
class Child:
    """One child for `ChildTasks.run_children`: a target and what `start_child` takes with it."""

    target: Target
    inputs: dict[str, JsonValue] | None = None
    instruction: str | None = None
    name: str | None = None
    model: str | None = None


class _Parent(Protocol):
    store: StateStore
    lease: Lease
    journal: Journal
    task: Task
    budget: BudgetTracker

    @property
    def current_step(self) -> int | None: ...

    def _take_seq(self, count: int = 1) -> int: ...


class ChildTasks:
    """``ctx.start_child``, ``wait_child``, ``run_child`` and ``run_children``; part of `Context`."""

    async def start_child(
        self: _Parent,
        target: Target,
        inputs: dict[str, JsonValue] | None = None,
        *,
        instruction: str | None = None,
        name: str | None = None,
        model: str | None = None,
    ) -> str:
        """Start a child task for `target` (a `Workflow`, an `Agent`, or a ``"module:function"``
        / ``"file.py:function"`` reference) and return its id (journaled: a replay returns it again).

        Raises:
            BudgetExceeded: the parent has none of a limited budget left to give a child.
        """
        return await _start(self, self._take_seq(), Child(target, inputs, instruction, name, model))

    async def wait_child(self: _Parent, child_id: str) -> JsonValue:
        """The child's result, once it has ended; the task waits (``waiting(children)``) until then.

        Raises:
            OperationFailed: the child failed or was cancelled; it carries the child's error.
            BudgetExceeded: what the child spent took the parent past its budget.
        """
        return await _wait(self, self._take_seq(), child_id)

    async def run_child(
        self: _Parent,
        target: Target,
        inputs: dict[str, JsonValue] | None = None,
        *,
        instruction: str | None = None,
        name: str | None = None,
        model: str | None = None,
    ) -> JsonValue:
        """`start_child` then `wait_child`; both seqs are taken at once, so that several
        ``run_child`` under ``asyncio.gather`` number their children in call order."""
        seq = self._take_seq(2)
        child_id = await _start(self, seq, Child(target, inputs, instruction, name, model))
        return await _wait(self, seq + 1, child_id)

    async def run_children(
        self: _Parent, targets: Sequence[Child | Target], *, max_concurrency: int | None = None
    ) -> list[JsonValue]:
        """Run a child per target, at most `max_concurrency` at once; their results in order.

        The children start in order; before child ``i`` starts, child
        ``i - max_concurrency`` is waited for (in order, so a replay takes
        the same path whatever finished first).

        Raises:
            OperationFailed: a child failed (the first, in order, that is waited for).
        """
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        window = max_concurrency or len(targets) or 1
        ids: list[str] = []
        results: list[JsonValue] = []
        for target in targets:
            if len(ids) - len(results) >= window:
                results.append(await _wait(self, self._take_seq(), ids[len(results)]))
            child = target if isinstance(target, Child) else Child(target)
            ids.append(await _start(self, self._take_seq(), child))
        while len(results) < len(ids):
            results.append(await _wait(self, self._take_seq(), ids[len(results)]))
        return results


def _recorded(ctx: _Parent, seq: int, name: str) -> Operation | None:
    op = ctx.journal.lookup(seq)
    if op is not None and (op.kind is not OpKind.CHILD or op.name != name):
        raise NonDeterminismError(ctx.task.id, seq, f"{op.kind} {op.name}", f"{OpKind.CHILD} {name}")
    return op


def _child_budget(ctx: _Parent, own: Budget) -> Budget:
    """`own`, held to what the parent has left of each limit (fail closed when nothing is)."""
    parent, spent = ctx.task.budget, ctx.budget
    changes: dict[str, Any] = {}
    for limit, used in (
        ("max_steps", spent.steps),
        ("max_llm_tokens", spent.llm_tokens),
        ("max_cost", spent.cost),
    ):
        cap = getattr(parent, limit)
        if cap is None:
            continue
        left = cap - used
        if left <= 0:
            raise BudgetExceeded(
                f"budget exceeded ({limit}: {used:g} of {cap:g} used; nothing left to give a child task)"
            )
        mine = getattr(own, limit)
        changes[limit] = left if mine is None else min(mine, left)
    return own.model_copy(update=changes)


async def _start(ctx: _Parent, seq: int, child: Child) -> str:
    recorded = _recorded(ctx, seq, "start_child")
    if recorded is not None:
        assert isinstance(recorded.output, dict)
        return str(recorded.output["child_id"])
    parent = ctx.task
    task = new_task(
        child.target,
        child.inputs,
        name=child.name,
        instruction=child.instruction or "",
        model=child.model,
        task_id=f"{parent.id}.{seq}",
        deadline=parent.deadline,
        approval_timeout=parent.approval_timeout,
        priority=parent.priority,
        parent_id=parent.id,
    )
    task = task.model_copy(update={"budget": _child_budget(ctx, task.budget)})
    op = Operation(
        task_id=parent.id,
        seq=seq,
        kind=OpKind.CHILD,
        name="start_child",
        idempotency_key=f"{parent.id}:{seq}",
        status=OpStatus.SUCCEEDED,
        input={"workflow": task.workflow, "name": task.name},
        output={"child_id": task.id},
        meta=step_meta(ctx.current_step),
        finished_at=utcnow(),
    )
    async with ctx.store.transaction(fence=ctx.lease) as tx:
        await tx.create_task(task)
        await tx.record_op_finished(op)
        await tx.put_trigger(Trigger(kind="start", task_id=task.id))
        await tx.append_event(
            Event(
                task_id=task.id,
                kind="task_created",
                message=f"task created: {task.name}, a child of {parent.id}",
                display_message=f"Created {task.name}",
                data={"workflow": task.workflow, "parent_id": parent.id},
            )
        )
        await tx.append_event(
            Event(
                task_id=parent.id,
                kind="child_started",
                message=f"child task {task.id} started ({task.name})",
                data={"seq": seq, "child_id": task.id},
            )
        )
    ctx.journal.recorded[seq] = op
    return task.id


async def child_spending(tx: StoreOps, task_id: str) -> dict[str, float]:
    """What a task spent: tokens and cost of its model calls, its steps, and its children's.

    ``unpriced_calls`` counts the model calls no price was known for (their
    cost is not in ``cost``).
    """
    tokens, cost, unpriced, steps = 0.0, 0.0, 0.0, float(len(await tx.list_steps(task_id)))
    for op in await tx.list_ops(task_id):
        usage = op.meta.get("usage") if op.kind is OpKind.MODEL else None
        if isinstance(usage, dict):
            tokens += float(usage.get("prompt_tokens", 0)) + float(usage.get("completion_tokens", 0))
            if usage.get("cost") is None:
                unpriced += 1
            else:
                cost += float(str(usage["cost"]))
        spent = op.output.get("spent") if op.kind is OpKind.CHILD and isinstance(op.output, dict) else None
        if isinstance(spent, dict):
            tokens += float(spent.get("llm_tokens", 0))
            cost += float(spent.get("cost", 0))
            unpriced += float(spent.get("unpriced_calls", 0))
            steps += float(spent.get("steps", 0))
    return {"llm_tokens": tokens, "cost": cost, "unpriced_calls": unpriced, "steps": steps}


async def _wait(ctx: _Parent, seq: int, child_id: str) -> JsonValue:
    recorded = _recorded(ctx, seq, "wait_child")
    if recorded is None:
        # One wait at a time per run: waits under a gather would otherwise each hold the
        # lease's row while asking for the task's (a deadlock on PostgreSQL).
        lock: asyncio.Lock = ctx.__dict__.setdefault("_child_wait_lock", asyncio.Lock())
        async with lock:
            recorded = await _collect(ctx, seq, child_id)
    assert isinstance(recorded.output, dict)
    spent = recorded.output.get("spent")
    if isinstance(spent, dict):
        ctx.budget.llm_tokens += int(float(str(spent.get("llm_tokens", 0))))
        ctx.budget.cost += float(str(spent.get("cost", 0)))
        ctx.budget.unpriced_calls += int(float(str(spent.get("unpriced_calls", 0))))
        ctx.budget.steps += int(float(str(spent.get("steps", 0))))
    if recorded.status is OpStatus.FAILED:
        raise OperationFailed("wait_child", seq, recorded.error_type or "ChildFailed", recorded.error or "")
    await ctx.budget.check()
    result: JsonValue = recorded.output.get("result")
    return result


async def _collect(ctx: _Parent, seq: int, child_id: str) -> Operation:
    """Journal the ended child's outcome, or make the parent wait for it (and unwind)."""
    parent = ctx.task
    if parent.waiting_on is WaitReason.CHILDREN:  # a sibling under a gather made it wait already
        raise TaskSuspended(WaitReason.CHILDREN, f"waiting for child task {child_id}")
    async with ctx.store.transaction(fence=ctx.lease) as tx:
        # The parent's row first: a child ending now either ended before this read, or
        # finds the parent waiting when it gets the row (and wakes it; `wake_parent`).
        current = await tx.get_task_locked(parent.id)
        child = await tx.get_task(child_id)
        # A retry or fork replays its original's journal: the original's children are its own.
        if child.parent_id is None or child.parent_id not in (parent.id, parent.forked_from):
            raise OperationFailed(
                "wait_child", seq, "InputError", f"task {child_id} is not a child of {parent.id}"
            )
        if not child.status.is_terminal:
            # Let go now: the trigger a child's end puts must find the parent free to claim.
            # (Before any other write: a sibling call's transaction may hold the lease's row.)
            await tx.release_lease(ctx.lease)
            waiting = current.transition(
                TaskStatus.WAITING, waiting_on=WaitReason.CHILDREN, cost=ctx.budget.cost
            )
            await tx.update_task(waiting)
            await tx.append_event(
                Event(
                    task_id=parent.id,
                    kind="waiting",
                    message=f"waiting for child task {child_id}",
                    display_message=f"waiting (children): {child_id}",
                    data={"reason": str(WaitReason.CHILDREN), "child_id": child_id},
                )
            )
            ctx.task = waiting
        else:
            failed = child.status is not TaskStatus.COMPLETED
            op = Operation(
                task_id=parent.id,
                seq=seq,
                kind=OpKind.CHILD,
                name="wait_child",
                idempotency_key=f"{parent.id}:{seq}",
                status=OpStatus.FAILED if failed else OpStatus.SUCCEEDED,
                input={"child_id": child_id},
                output={
                    "result": None if failed else child.result,
                    "status": str(child.status),
                    "spent": await child_spending(tx, child_id),
                },
                error=f"child task {child_id} {child.status}: {child.error}" if failed else None,
                error_type="ChildFailed" if failed else None,
                meta=step_meta(ctx.current_step),
                finished_at=utcnow(),
            )
            await tx.record_op_finished(op)
            ctx.journal.recorded[seq] = op
            return op
    raise TaskSuspended(WaitReason.CHILDREN, f"waiting for child task {child_id}")


async def wake_parent(tx: StoreOps, task: Task) -> None:
    """In the transaction that ends `task`: wake its parent if it waits on children."""
    if task.parent_id is None or not task.status.is_terminal:
        return
    parent = await tx.get_task_locked(task.parent_id)
    if parent.waiting_on is WaitReason.CHILDREN:
        await tx.put_trigger(
            Trigger(kind="wake", task_id=parent.id, dedupe_key=f"{parent.id}:child:{task.id}")
        )

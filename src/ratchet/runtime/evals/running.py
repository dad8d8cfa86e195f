"""Running an eval: each selected task's workflow again, with a new model, in a store of its own.

For each recorded task (docs/evals.md):

1. its journal is read from the user's store (nothing is written there);
2. a copy of the task, queued, with the new model and no outcome, is made in
   a memory store of its own (the reference store), sealed again for the new
   model if the recorded task's seal holds (a task whose seal does not hold is
   not run: its code references may not be what was recorded);
3. its workflow runs there, as a worker runs it, with `RecordedTools` as its
   innermost middleware: model calls go to the new model through the normal
   provider path, every tool call is answered from the recording, and none
   reaches a tool. Its workspace is left out (nothing of it is written) and
   no person is asked to approve anything (no call would run);
4. the two runs are made `EvalRun` records and the scorer judges them.

Clock reads and ids are taken afresh in the new run (they change nothing in
the world); a new run that asks a person, waits for a message or starts a
child task stops there, as a diff: its store of its own has no one to answer.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ...engine.journal.large_results import read_back, stored_result
from ...engine.run.runner import run_task
from ...engine.workflow import Workflow, load_workflow
from ...errors import CodeUnsealed, RatchetError
from ...providers.scripted import portable_model
from ...records import AgentState, Operation, OpKind, OpStatus, Task, TaskFilter, TaskStatus, utcnow
from ...store import StateStore
from ...store.memory import MemoryStore
from ...trust.code import CodeTrust
from ...trust.seal import SigningKey
from .recording import RecordedCall, RecordedTools, Recording
from .report import EvalReport, EvalRun, EvalTotals, TaskEval
from .scoring import Scorer, judge

__all__ = ["COMPLETED_ONLY", "eval_tasks", "selected_tasks"]

COMPLETED_ONLY = TaskFilter(statuses=frozenset({TaskStatus.COMPLETED}))
"""What an eval selects when no filter is given: the tasks that completed."""

_PAGE = 200


async def selected_tasks(store: StateStore, where: TaskFilter) -> list[Task]:
    """The tasks `where` keeps, oldest first, read in one reading transaction."""
    async with store.reading() as tx:
        rows = await tx.list_task_rows(where)
        found: dict[str, Task] = {}
        for start in range(0, len(rows), _PAGE):
            page = [row.id for row in rows[start : start + _PAGE]]
            found.update((task.id, task) for task in await tx.get_tasks(page))
    return [found[row.id] for row in rows if row.id in found]


async def eval_tasks(
    store: StateStore,
    tasks: Sequence[Task],
    model: str,
    scorer: Scorer,
    *,
    trust: CodeTrust,
    key: SigningKey,
) -> EvalReport:
    """Run each of `tasks` again with `model`, tool calls served from its journal, and score it."""
    evals = [await _eval_one(store, task, model, scorer, trust, key) for task in tasks]
    return EvalReport(model=model, scorer=scorer.name, tasks=evals, totals=EvalTotals.of(evals))


async def _eval_one(
    store: StateStore, task: Task, model: str, scorer: Scorer, trust: CodeTrust, key: SigningKey
) -> TaskEval:
    ops = await store.list_ops(task.id)
    calls = [
        RecordedCall(op, await _output(store, op)) for op in ops if op.kind is OpKind.TOOL and op.is_finished
    ]
    recorded = _run_of(task, task.model, ops, [c.call for c in calls])
    recording = Recording(calls)
    candidate = await _run_again(task, model, recording, trust, key)
    score = judge(scorer, recorded, candidate)
    return TaskEval(
        task_id=task.id,
        name=task.name,
        verdict=score.verdict,
        score=score.score,
        differences=score.differences,
        recorded=recorded,
        candidate=candidate,
    )


async def _output(store: StateStore, op: Operation) -> Any:
    """What a recorded call returned, read back whole when it was set aside as an artifact."""
    stored = stored_result(op)
    return op.output if stored is None else await read_back(store, stored)


async def _run_again(
    task: Task, model: str, recording: Recording, trust: CodeTrust, key: SigningKey
) -> EvalRun:
    """The new run of `task` with `model`, in a memory store of its own."""
    try:
        keys = key.check(task)
    except CodeUnsealed as refused:
        return _not_run(task, model, f"not run: {refused}")
    fresh = key.seal(_fresh_copy(task, model), keys)
    eval_store = MemoryStore()
    await eval_store.open()
    try:
        async with eval_store.transaction() as tx:
            await tx.create_task(fresh)

        def load(reference: str) -> Workflow:
            found = load_workflow(reference)
            serving = copy.copy(found)
            serving.middleware = [*found.middleware, RecordedTools(recording)]  # innermost of its own
            return serving

        try:
            ended = await run_task(eval_store, fresh.id, load=load, approval_hook=None, trust=trust, key=key)
        except RatchetError as problem:  # the run could not go on here (its lease, its store)
            return _not_run(task, model, f"not run: {problem}")
        ops = await eval_store.list_ops(fresh.id)
    finally:
        await eval_store.close()
    run = _run_of(ended, model, ops, recording.new_calls())
    stopped = _why_stopped(ended, recording)
    if stopped is None:
        return run
    status = "stopped" if recording.missing is not None else run.status
    return run.model_copy(update={"stopped": stopped, "status": status})


def _fresh_copy(task: Task, model: str) -> Task:
    """`task` as it stood before it ran, to run with `model`: same id, inputs and instruction."""
    now = utcnow()
    fresh = task.model_copy(
        update={
            "status": TaskStatus.QUEUED,
            "waiting_on": None,
            "result": None,
            "error": None,
            "state": AgentState(),
            "model": portable_model(model),
            "fallback_models": [],  # the new model alone answers: no fallback to the old ones
            "workspace": None,  # nothing of the world is written, a workspace's directory neither
            "deadline": None,
            "write_mark": None,
            "cost": 0.0,
            "parent_id": None,
            "queue": None,
            "seal": None,
            "created_at": now,
            "updated_at": now,
            "started_at": None,
        }
    )
    return Task.model_validate(fresh.model_dump())


def _why_stopped(ended: Task, recording: Recording) -> str | None:
    if recording.missing is not None:
        return f"tool call not in the recording: {recording.missing.described()}"
    if ended.status is TaskStatus.WAITING:
        reason = ended.waiting_on.value if ended.waiting_on is not None else "something"
        return f"the new run waits on {reason}, which an eval cannot give it"
    if not ended.status.is_terminal:
        return f"the new run stopped before its end ({ended.status.value})"
    return None


def _run_of(task: Task, model: str | None, ops: Sequence[Operation], calls: list[Any]) -> EvalRun:
    tokens, latency = 0, 0.0
    for op in ops:
        if op.kind is not OpKind.MODEL or op.status is not OpStatus.SUCCEEDED:
            continue
        usage = op.meta.get("usage")
        if isinstance(usage, dict):
            tokens += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        if op.finished_at is not None:
            latency += max((op.finished_at - op.started_at).total_seconds(), 0.0)
    return EvalRun(
        task_id=task.id,
        model=model,
        status=task.status.value,
        result=task.result,
        error=task.error,
        tool_calls=calls,
        tokens=tokens,
        cost=task.cost,
        latency=latency,
    )


def _not_run(task: Task, model: str, why: str) -> EvalRun:
    return EvalRun(task_id=task.id, model=model, status=TaskStatus.QUEUED.value, stopped=why)

"""Two or more tasks side by side: what each ended with and spent, its steps, its tool calls, where they part.

`ratchet compare` (cli/compare.py), ``GET /api/compare`` and the dashboard's
compare page (serve/) read the comparison through this module only, so each
says the same of every task (docs/cli.md, "Comparing tasks").

What it can honestly say, from what the store keeps:

- **each task**: its status, result or error, the tokens its journal's model
  calls used (in and out), their cost (of the calls a price was known for),
  the models that answered, and its wall time, from its start to its end
  (none until it ended). A fork's journal begins with the calls it copied from
  its origin: they count in both, as both replayed them.
- **steps**: by index (numbered from 1), each task's step of that index, its
  name and outcome; ``same`` when every task has it with the same name and
  outcome.
- **tool calls**, aligned by the step they ran in and their position among
  that step's tool calls (the 2nd tool call of step 3 against the 2nd tool
  call of step 3), listed in journal order. A position is ``same`` when every
  task made a call there with the same tool, arguments and result (or
  error); ``differs`` when every task made one and they are not all alike;
  ``only in`` (with the tasks that made it) when some did not. Aligning by
  step and position, not by seq, keeps one extra model call or clock read
  from shifting every later call into a difference.
- **where they part**: the journals compared call by call in seq order (kind,
  name, input, output, outcome): the shared prefix is how many leading calls
  are alike in every task, and ``parted_at_seq`` the first seq that is not
  (none when the journals are alike). A fork shares its origin's journal up
  to its checkpoint, so they part after it at the earliest.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..records import Operation, OpKind, Step, Task
from ..store import StoreOps
from .journal import preview, step_of
from .model_usage import answered_by
from .record_json import iso_time

__all__ = [
    "MAX_COMPARED",
    "CompareSide",
    "Comparison",
    "StepRow",
    "ToolCallRow",
    "check_compared",
    "comparison_json",
    "load_comparison",
]

MAX_COMPARED = 8  # a column a task: more than this fits neither a terminal nor a page


def check_compared(task_ids: Sequence[str]) -> list[str]:
    """The ids to compare, checked: at least 2, at most `MAX_COMPARED`, none twice.

    Raises:
        InputError: too few or too many ids, or one given twice.
    """
    ids = list(task_ids)
    if len(ids) < 2:
        raise InputError(f"compare takes at least 2 task ids; {len(ids)} given")
    if len(ids) > MAX_COMPARED:
        raise InputError(f"compare takes at most {MAX_COMPARED} task ids; {len(ids)} given")
    twice = next((task_id for n, task_id in enumerate(ids) if task_id in ids[:n]), None)
    if twice is not None:
        raise InputError(f"task {twice!r} is given twice; compare each task once")
    return ids


@dataclass(frozen=True)
class CompareSide:
    """One task of a comparison, and what its journal says it used."""

    task: Task
    steps: list[Step]
    ops: list[Operation]
    tokens_in: int
    tokens_out: int
    cost: float
    unpriced_calls: int
    models: list[str]

    @property
    def ended_at(self) -> dt.datetime | None:
        return self.task.updated_at if self.task.status.is_terminal else None

    @property
    def wall_seconds(self) -> float | None:
        """Seconds from its start to its end (None until it started and ended)."""
        start, end = self.task.started_at, self.ended_at
        return None if start is None or end is None else max((end - start).total_seconds(), 0.0)


@dataclass(frozen=True)
class StepRow:
    """The steps of one index (from 1), one a task (None: that task has no such step)."""

    step: int
    steps: list[Step | None]

    @property
    def same(self) -> bool:
        first = self.steps[0]
        return first is not None and all(
            step is not None and (step.name, step.status) == (first.name, first.status) for step in self.steps
        )


@dataclass(frozen=True)
class ToolCallRow:
    """The tool calls at one position of one step, one a task (None: that task made none there)."""

    step: int | None  # from 1; None: outside any step
    position: int  # from 1, among the step's tool calls
    calls: list[Operation | None]
    mark: str  # "same", "differs" or "only in"
    only_in: list[str]  # with "only in": the tasks that made a call here


@dataclass(frozen=True)
class Comparison:
    """Tasks side by side (see the module's docstring)."""

    sides: list[CompareSide]
    steps: list[StepRow]
    tool_calls: list[ToolCallRow]
    shared_prefix: int
    parted_at_seq: int | None


def _side(task: Task, steps: list[Step], ops: list[Operation]) -> CompareSide:
    tokens_in = tokens_out = unpriced = 0
    cost = 0.0
    models: list[str] = []
    for op in ops:
        if op.kind is not OpKind.MODEL:
            continue
        name = answered_by(op, task.model)
        if name not in models:
            models.append(name)
        usage = op.meta.get("usage")
        if not isinstance(usage, dict):
            continue
        tokens_in += int(usage.get("prompt_tokens") or 0)
        tokens_out += int(usage.get("completion_tokens") or 0)
        if usage.get("cost") is None:
            unpriced += 1
        else:
            cost += float(str(usage["cost"]))
    return CompareSide(task, steps, ops, tokens_in, tokens_out, cost, unpriced, models)


async def load_comparison(tx: StoreOps, task_ids: Sequence[str]) -> Comparison:
    """Read and compare the tasks, in the order given, from one read transaction `tx`.

    Raises:
        InputError: the ids are not 2 to `MAX_COMPARED` different ones (`check_compared`).
        TaskNotFound: no task has one of the ids.
    """
    sides = []
    for task_id in check_compared(task_ids):
        task = await tx.get_task(task_id)
        sides.append(_side(task, await tx.list_steps(task_id), await tx.list_ops(task_id)))
    shared, parted = _parting(sides)
    return Comparison(sides, _step_rows(sides), _tool_call_rows(sides), shared, parted)


def _step_rows(sides: list[CompareSide]) -> list[StepRow]:
    by_index = [{step.index: step for step in side.steps} for side in sides]
    indexes = sorted({index for steps in by_index for index in steps})
    return [StepRow(index + 1, [steps.get(index) for steps in by_index]) for index in indexes]


def _same_call(calls: list[Operation]) -> bool:
    first = _what_happened(calls[0])
    return all(_what_happened(call) == first for call in calls[1:])


def _what_happened(op: Operation) -> tuple[Any, ...]:
    """What makes two calls alike: not their seq, times or idempotency key, which name the task."""
    return (op.kind, op.name, op.input, op.status, op.output, op.error)


def _tool_call_rows(sides: list[CompareSide]) -> list[ToolCallRow]:
    aligned: dict[tuple[int | None, int], list[Operation | None]] = {}
    for n, side in enumerate(sides):
        made: dict[int | None, int] = {}
        for op in side.ops:
            if op.kind is not OpKind.TOOL:
                continue
            step = step_of(op)
            made[step] = made.get(step, 0) + 1
            aligned.setdefault((step, made[step]), [None] * len(sides))[n] = op
    rows = []
    for (step, position), calls in sorted(aligned.items(), key=lambda item: _first_seq(item[1])):
        present = [call for call in calls if call is not None]
        if len(present) < len(calls):
            mark = "only in"
            only_in = [side.task.id for side, call in zip(sides, calls, strict=True) if call is not None]
        else:
            mark, only_in = ("same" if _same_call(present) else "differs"), []
        rows.append(ToolCallRow(step, position, calls, mark, only_in))
    return rows


def _first_seq(calls: list[Operation | None]) -> int:
    return min(call.seq for call in calls if call is not None)


def _parting(sides: list[CompareSide]) -> tuple[int, int | None]:
    """How many leading calls every journal shares, and the first seq where they part (None: never)."""
    longest = max(len(side.ops) for side in sides)
    for position in range(longest):
        calls = [side.ops[position] if position < len(side.ops) else None for side in sides]
        present = [call for call in calls if call is not None]
        if len(present) < len(calls) or not _same_call(present):
            return position, min(call.seq for call in present)
    return longest, None


def _call_json(op: Operation | None) -> dict[str, Any] | None:
    if op is None:
        return None
    return {
        "seq": op.seq,
        "name": op.name,
        "arguments": op.input,
        "status": str(op.status),
        "result_preview": preview(op.output),
        "error": op.error,
    }


def comparison_json(found: Comparison) -> dict[str, Any]:
    """The comparison as ``GET /api/compare`` and ``ratchet compare --json`` give it.

    ``tasks``: one record a task, in the order asked; ``steps`` and
    ``tool_calls``: one row an index or position, with one entry a task in
    that order (null: none there); ``shared_prefix`` and ``parted_at_seq``.
    """
    return {
        "tasks": [
            {
                "task_id": side.task.id,
                "name": side.task.name,
                "status": str(side.task.status),
                "waiting_on": None if side.task.waiting_on is None else str(side.task.waiting_on),
                "forked_from": side.task.forked_from,
                "result": side.task.result,
                "error": side.task.error,
                "tokens_in": side.tokens_in,
                "tokens_out": side.tokens_out,
                "cost": side.cost,
                "unpriced_calls": side.unpriced_calls,
                "models": side.models,
                "started_at": iso_time(side.task.started_at),
                "ended_at": iso_time(side.ended_at),
                "wall_seconds": side.wall_seconds,
                "calls": len(side.ops),
            }
            for side in found.sides
        ],
        "steps": [
            {
                "step": row.step,
                "same": row.same,
                "tasks": [
                    None if step is None else {"name": step.name, "status": str(step.status)}
                    for step in row.steps
                ],
            }
            for row in found.steps
        ],
        "tool_calls": [
            {
                "step": row.step,
                "position": row.position,
                "mark": row.mark,
                "only_in": row.only_in,
                "calls": [_call_json(call) for call in row.calls],
            }
            for row in found.tool_calls
        ],
        "shared_prefix": found.shared_prefix,
        "parted_at_seq": found.parted_at_seq,
    }

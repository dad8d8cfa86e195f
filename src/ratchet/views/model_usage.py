"""Which models answered a task's model calls, and what each used: the task page's "Model" line.

A task names one model (``task.model``, an agent's spec its own); a workflow
may ask another for one call (``ctx.call_model(..., model=...)``, recorded in
the call's input), and a provider says which model answered (the response's
``model``). This reads the task's journal once and counts, per model, the
calls, their tokens and their cost.
"""

from __future__ import annotations

from typing import Any

from ..records import Operation, OpKind
from ..store import StoreOps

__all__ = ["answered_by", "model_usage"]


_ZERO: dict[str, Any] = {"calls": 0, "llm_tokens": 0, "cost": 0.0, "unpriced_calls": 0}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def answered_by(op: Operation, task_model: str | None) -> str:
    """The model a model call counts under: the one that answered it, else the one asked, else the task's."""
    answer = op.output if isinstance(op.output, dict) else {}
    asked = op.input if isinstance(op.input, dict) else {}
    return _text(answer.get("model")) or _text(asked.get("model")) or task_model or "unknown"


async def model_usage(tx: StoreOps, task_id: str) -> dict[str, Any]:
    """``{"task_model": ..., "models": [{"model", "calls", "llm_tokens", "cost", "unpriced_calls"}]}``,
    the most used model first; a call's model is the one that answered it, else the one asked, else
    the task's.

    Raises:
        TaskNotFound: no task has that id.
    """
    task = await tx.get_task(task_id)
    counted: dict[str, dict[str, Any]] = {}
    for op in await tx.list_ops(task_id):
        if op.kind is not OpKind.MODEL:
            continue
        name = answered_by(op, task.model)
        row = counted.setdefault(name, dict(_ZERO, model=name))
        row["calls"] += 1
        usage = op.meta.get("usage")
        if isinstance(usage, dict):
            row["llm_tokens"] += sum(
                int(usage.get(key) or 0) for key in ("prompt_tokens", "completion_tokens")
            )
            if usage.get("cost") is None:
                row["unpriced_calls"] += 1
            else:
                row["cost"] += float(str(usage["cost"]))
    models = sorted(counted.values(), key=lambda row: (-row["calls"], row["model"]))
    return {"task_model": task.model, "models": models}

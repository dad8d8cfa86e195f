"""A LangGraph thread's task as people read it: its checkpoints as steps, its pending writes, its interrupts.

A thread's task (``langgraph:<thread id>``, ratchet.records.langgraph_thread)
plans no steps of its own: `load_task_view` gives its root graph's newest
checkpoints instead, oldest first, each a step named by LangGraph's step
number and source and the nodes whose writes it holds. The pending writes
of its latest checkpoint and its interrupts (the questions its saver
recorded, answered or not) are the thread's part of the task's document.

Everything here is read through the store's LangGraph operations and the
journal, as plain rows: the channel values are the serializer's bytes,
which only the bridge reads, so a write is shown by its channel and node,
and an interrupt by the JSON its question recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..records import LangGraphCheckpoint, OpKind, Step, StepStatus, Task
from ..records.langgraph_thread import thread_of
from ..store import StoreOps

__all__ = ["THREAD_STEPS", "ThreadView", "load_thread_view", "thread_json", "thread_steps"]

THREAD_STEPS = 50
"""The newest checkpoints a thread's task shows as its steps."""


@dataclass(frozen=True)
class ThreadWrite:
    """A pending write: the node (or LangGraph task path) that wrote it, and its channel."""

    node: str
    task_id: str
    channel: str


@dataclass(frozen=True)
class ThreadCheckpoint:
    """A checkpoint of the thread's root graph, and the writes pending on it."""

    checkpoint_id: str
    parent_id: str | None
    step: int | None
    source: str
    writes: list[ThreadWrite]

    @property
    def nodes(self) -> list[str]:
        """The nodes that wrote on it (those that ran after it), in the order first seen."""
        return list(dict.fromkeys(w.node for w in self.writes if not w.node.startswith("~")))


@dataclass(frozen=True)
class ThreadInterrupt:
    """An interrupt of the thread, as its question: what it asked, and the answer if it has one."""

    seq: int
    interrupt_id: str
    question: str
    value: Any
    answered: bool
    answer: Any
    answered_by: str | None


@dataclass(frozen=True)
class ThreadView:
    """What a thread's task shows beyond a task's own fields."""

    thread_id: str
    graph: str | None
    checkpoints: list[ThreadCheckpoint]  # oldest first, the newest `THREAD_STEPS`
    interrupts: list[ThreadInterrupt] = field(default_factory=list)

    @property
    def pending_writes(self) -> list[ThreadWrite]:
        """The writes pending on the latest checkpoint (what its next step has done so far)."""
        return self.checkpoints[-1].writes if self.checkpoints else []


async def load_thread_view(tx: StoreOps, task: Task) -> ThreadView | None:
    """The thread `task` is, read in `tx`; None for a task that is not a LangGraph thread."""
    thread_id = thread_of(task)
    if thread_id is None:
        return None
    rows = await tx.list_langgraph_checkpoints(thread_id, "", limit=THREAD_STEPS)
    rows.reverse()
    writes: dict[str, list[ThreadWrite]] = {}
    if rows:
        found = await tx.list_langgraph_writes(thread_id, "", [row.checkpoint_id for row in rows])
        for w in sorted(found, key=lambda w: (w.task_path, w.task_id, w.idx)):
            writes.setdefault(w.checkpoint_id, []).append(
                ThreadWrite(_node(w.task_path), w.task_id, w.channel)
            )
    graph = task.inputs_params.get("graph")
    return ThreadView(
        thread_id=thread_id,
        graph=graph if isinstance(graph, str) else None,
        checkpoints=[_checkpoint(row, writes.get(row.checkpoint_id, [])) for row in rows],
        interrupts=[_interrupt(op) for op in await tx.list_ops(task.id) if op.kind is OpKind.QUESTION],
    )


def _checkpoint(row: LangGraphCheckpoint, writes: list[ThreadWrite]) -> ThreadCheckpoint:
    try:
        metadata = json.loads(row.metadata)
    except ValueError:
        metadata = {}
    metadata = metadata if isinstance(metadata, dict) else {}
    step = metadata.get("step")
    return ThreadCheckpoint(
        checkpoint_id=row.checkpoint_id,
        parent_id=row.parent_id,
        step=step if isinstance(step, int) else None,
        source=str(metadata.get("source") or "?"),
        writes=writes,
    )


def _node(task_path: str) -> str:
    """The node a LangGraph task path names: ``~__pregel_pull, NODE`` -> ``NODE``; else the path."""
    parts = [part.strip() for part in task_path.split(",")]
    if len(parts) == 2 and parts[0] == "~__pregel_pull":
        return parts[1]
    return task_path or "~resume"  # a resume value is written by no node


def _interrupt(op: Any) -> ThreadInterrupt:
    given = op.input if isinstance(op.input, dict) else {}
    answered = str(op.status) == "succeeded"
    return ThreadInterrupt(
        seq=op.seq,
        interrupt_id=str(op.meta.get("interrupt_id", "")),
        question=str(given.get("question", "")),
        value=given.get("interrupt"),
        answered=answered,
        answer=op.output if answered else None,
        answered_by=op.meta.get("answered_by") if answered else None,
    )


def thread_steps(view: ThreadView, task: Task) -> list[Step]:
    """The thread's checkpoints as the task's steps: the latest is current while the task goes on."""
    steps = []
    for index, checkpoint in enumerate(view.checkpoints):
        last = index == len(view.checkpoints) - 1
        status = StepStatus.CURRENT if last and not task.status.is_terminal else StepStatus.COMPLETED
        number = "" if checkpoint.step is None else f" {checkpoint.step}"
        ran = f": {', '.join(checkpoint.nodes)}" if checkpoint.nodes else ""
        channels = ", ".join(f"{w.channel} by {w.node}" for w in checkpoint.writes)
        steps.append(
            Step(
                task_id=task.id,
                index=index,
                name=f"step{number} ({checkpoint.source}){ran}",
                description=f"checkpoint {checkpoint.checkpoint_id}"
                + (f"; writes: {channels}" if channels else ""),
                status=status,
            )
        )
    return steps


def thread_json(view: ThreadView) -> dict[str, Any]:
    """The ``langgraph`` part of a thread's task document (`ratchet show --json`, the HTTP API, MCP)."""
    return {
        "thread_id": view.thread_id,
        "graph": view.graph,
        "checkpoints": [
            {
                "checkpoint_id": c.checkpoint_id,
                "parent_id": c.parent_id,
                "step": c.step,
                "source": c.source,
                "nodes": c.nodes,
            }
            for c in view.checkpoints
        ],
        "pending_writes": [
            {"node": w.node, "task_id": w.task_id, "channel": w.channel} for w in view.pending_writes
        ],
        "interrupts": [
            {
                "interrupt_id": i.interrupt_id,
                "question": i.question,
                "value": i.value,
                "answered": i.answered,
                "answer": i.answer,
                "answered_by": i.answered_by,
                "seq": i.seq,
            }
            for i in view.interrupts
        ],
    }

"""What the demo concludes from the store and the ledger: pure functions, no I/O.

After the second worker finished, the journal and the events tell which
operations the resume took from the journal (replayed), which one it ran
again because it was in flight at the crash, and which it ran for the first
time (live); the ledger tells how often each tool ran and took effect.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from ..records import Event, Lease, Operation, OpStatus, Step, Task, TaskStatus
from .ledger import Effect, Invocation

__all__ = [
    "TOOLS",
    "CrashState",
    "How",
    "OpRun",
    "ToolTally",
    "how_the_resume_ran",
    "problems",
    "tally",
]

TOOLS = ("check_status", "build_image", "push_image", "apply_manifest", "verify_rollout")
CRASHED_TOOL = "apply_manifest"


class How(enum.StrEnum):
    """How the resume came by an operation's result."""

    REPLAYED = "replayed"  # recorded before the crash: taken from the journal, nothing ran
    RERUN = "run again"  # in flight at the crash: run again with the same idempotency key
    LIVE = "live"  # after the crash point: run for the first time


@dataclass(frozen=True)
class CrashState:
    """The task as the store holds it right after the first worker was killed."""

    task: Task
    steps: list[Step]
    ops: list[Operation]
    lease: Lease | None


@dataclass(frozen=True)
class OpRun:
    """One journaled operation and how the resume came by its result."""

    seq: int
    kind: str
    name: str
    attempt: int
    how: How


@dataclass(frozen=True)
class ToolTally:
    """How often one tool ran, and how often it took effect, for the task."""

    tool: str
    keys: tuple[str, ...]
    invocations: int
    effects: int


def how_the_resume_ran(ops: Sequence[Operation], events: Sequence[Event]) -> list[OpRun]:
    """Classify each operation by the last resume: replayed, run again, or live.

    An operation finished before the last ``task_resumed`` event was replayed;
    one that an ``in_doubt_rerun`` event of that resume names was run again;
    the rest ran live.
    """
    resumes = [event for event in events if event.kind == "task_resumed"]
    if not resumes:
        return [OpRun(op.seq, str(op.kind), op.name, op.attempt, How.LIVE) for op in ops]
    resumed_at = resumes[-1].time
    rerun = {
        int(event.data["seq"])  # type: ignore[arg-type]
        for event in events
        if event.kind == "in_doubt_rerun" and event.time >= resumed_at and "seq" in event.data
    }
    runs = []
    for op in ops:
        if op.seq in rerun:
            how = How.RERUN
        elif op.finished_at is not None and op.finished_at < resumed_at:
            how = How.REPLAYED
        else:
            how = How.LIVE
        runs.append(OpRun(op.seq, str(op.kind), op.name, op.attempt, how))
    return runs


def tally(invocations: Sequence[Invocation], effects: Sequence[Effect]) -> list[ToolTally]:
    """Each demo tool's invocations and effects, in the order of the plan."""
    return [
        ToolTally(
            tool=tool,
            keys=tuple(dict.fromkeys(e.idempotency_key for e in effects if e.tool == tool)),
            invocations=sum(1 for i in invocations if i.tool == tool),
            effects=sum(1 for e in effects if e.tool == tool),
        )
        for tool in TOOLS
    ]


def problems(
    task: Task, ops: Sequence[Operation], runs: Sequence[OpRun], tallies: Sequence[ToolTally]
) -> list[str]:
    """Everything that contradicts "every effect exactly once"; empty when the demo proved it."""
    found = []
    if task.status is not TaskStatus.COMPLETED:
        found.append(f"the task ended {task.status_text}, not completed ({task.error or 'no error'})")
    unfinished = [op.seq for op in ops if op.status is not OpStatus.SUCCEEDED]
    if unfinished:
        found.append(f"operations without a successful result: {unfinished}")
    for row in tallies:
        expected_runs = 2 if row.tool == CRASHED_TOOL else 1
        if row.effects != 1:
            found.append(f"{row.tool} took effect {row.effects} times, not once")
        if row.invocations != expected_runs:
            found.append(f"{row.tool} was invoked {row.invocations} times, not {expected_runs}")
    if not any(run.how is How.REPLAYED for run in runs):
        found.append("the resume replayed nothing")
    if [run.name for run in runs if run.how is How.RERUN] != [CRASHED_TOOL]:
        found.append(f"the resume did not run {CRASHED_TOOL} again (and only it) with its key")
    return found

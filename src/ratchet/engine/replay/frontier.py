"""Where a replay check stops: the first call the journal cannot answer, before anything of it runs.

A check replays; it never acts. Two guards hold that line, each raising
`ReplayFrontier`:

- `replay_only`, wrapped around the whole call chain (outside every layer:
  observing, events, a workflow's own middleware, budgets, approvals, the
  journal, retries, limits), stops a model or tool call whose seq the journal
  does not hold, or holds unfinished (in doubt, or a retry due), before any
  layer sees it;
- `FrontierOps`, the operations of the copy store the check runs on, stops
  every other new operation where the engine records it (``ctx.now``,
  ``ctx.uuid``, ``ctx.sleep``, ``ctx.patched``, a state patch, a child task, a
  message received, a question asked): whatever records an operation records
  it there, so one guard covers them all, and those to come.

`ReplayFrontier` is a BaseException, as `TaskSuspended` is: a workflow's
``except Exception`` cannot swallow it and carry on past the frontier. So is
`ReplayDiverged`, what `replay_only` raises for a call the journal holds
under another name: a workflow that swallowed it would go on to diverge
later, and the check would name the wrong seq.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import JsonValue

from ...records import Operation
from ...store.memory import MemoryStore
from ...store.memory.ops import MemoryOps
from ..calls import Call

__all__ = ["FrontierOps", "ReplayDiverged", "ReplayFrontier", "ReplayStore", "replay_only"]


class ReplayFrontier(BaseException):
    """The replay reached a call the journal cannot answer: the check ends here, nothing of it ran.

    Attributes:
        seq: the journal position of that call.
        requested: the call, as ``"<kind> <name>"``.
    """

    def __init__(self, seq: int, requested: str) -> None:
        super().__init__(f"operation {seq} ({requested}) would run live")
        self.seq = seq
        self.requested = requested


class ReplayDiverged(BaseException):
    """The code asks for another call than the journal holds at its seq (a `NonDeterminismError` that
    workflow code cannot catch)."""

    def __init__(self, seq: int, recorded: str, requested: str) -> None:
        super().__init__(f"operation {seq} was journaled as {recorded!r}; the code asks for {requested!r}")
        self.seq = seq
        self.recorded = recorded
        self.requested = requested


async def replay_only(call: Call, proceed: Callable[[Call], Awaitable[JsonValue]]) -> JsonValue:
    """Let `call` through only when the journal holds its finished outcome (a replay).

    A call the journal holds under another name is a divergence even when
    that record is unfinished, found before any layer runs.

    Raises:
        ReplayDiverged: another call is recorded at its seq.
        ReplayFrontier: the call would run live.
    """
    recorded = call.context.journal.lookup(call.seq)
    if recorded is not None and (recorded.name != call.name or recorded.kind is not call.kind):
        raise ReplayDiverged(call.seq, f"{recorded.kind} {recorded.name}", f"{call.kind} {call.name}")
    if not call.will_replay:
        raise ReplayFrontier(call.seq, f"{call.kind} {call.name}")
    return await proceed(call)


class FrontierOps(MemoryOps):
    """The memory store's operations, refusing to record any operation once `guarding` is set.

    The check copies the task's journal in first (`guarding` off), then runs
    its workflow with it on: a new operation, or a change to a recorded one
    (an unfinished call settled, a child's end collected), is the frontier.
    """

    def __init__(self) -> None:
        super().__init__()
        self.guarding = False

    async def record_op_started(self, op: Operation) -> Operation:
        if self.guarding:
            raise ReplayFrontier(op.seq, f"{op.kind} {op.name}")
        return await super().record_op_started(op)

    async def record_op_finished(self, op: Operation) -> Operation:
        if self.guarding:
            raise ReplayFrontier(op.seq, f"{op.kind} {op.name}")
        return await super().record_op_finished(op)


class ReplayStore(MemoryStore):
    """A memory store on `FrontierOps`: the copy one task's replay check runs its workflow on."""

    def __init__(self) -> None:
        super().__init__()
        self.url = "memory://replay-check"
        self.frontier_ops = self._ops = FrontierOps()

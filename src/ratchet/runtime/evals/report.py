"""What an eval found: each task's recorded run and new run side by side, the verdict, and the totals.

`EvalRun` is also what a scorer receives, twice: the run the journal
recorded and the run the new model made (docs/evals.md, "Scorers").
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, JsonValue

from ...records import Record

__all__ = ["EvalReport", "EvalRun", "EvalToolCall", "EvalTotals", "TaskEval", "Verdict"]


class Verdict(StrEnum):
    MATCH = "match"
    DIFF = "diff"


class EvalToolCall(Record):
    """One tool call of a run: its name and arguments, and what it returned.

    Attributes:
        output: what the tool returned (in the new run: what the recording
            served for it); None for a call that failed or was not served.
        error: the tool's failure, as the journal recorded it, or None.
    """

    name: str
    arguments: JsonValue = None
    output: JsonValue = None
    error: str | None = None

    def described(self) -> str:
        """``name(arg='value', ...)``, as a person reads a call."""
        if isinstance(self.arguments, dict):
            return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.arguments.items())})"
        return f"{self.name}({self.arguments!r})" if self.arguments is not None else f"{self.name}()"


class EvalRun(Record):
    """One run of a task, recorded or new, as a scorer sees it.

    Attributes:
        task_id: the recorded task's id (the new run runs under the same id, in a store of its own).
        model: the model it ran with.
        status: how it ended: ``completed`` or ``failed``; for a new run that
            could not go on, ``stopped`` (at a tool call the recording does not
            have), ``waiting`` (on a person) or ``queued`` (not run: see `stopped`).
        result: its final answer (the task's result), or None.
        error: why it failed, or None.
        tool_calls: its tool calls in the order they were made.
        tokens: the tokens its model calls used (prompt and completion).
        cost: what its model calls cost, in US dollars (0 when no price is known).
        latency: the seconds its model calls took, summed (tool calls are
            served from the recording in the new run, so a task's wall time
            would not compare).
        stopped: why the new run stopped before its end (a tool call the
            recording does not have, a wait on a person), or None.
    """

    task_id: str
    model: str | None = None
    status: str
    result: JsonValue = None
    error: str | None = None
    tool_calls: list[EvalToolCall] = Field(default_factory=list)
    tokens: int = 0
    cost: float = 0.0
    latency: float = 0.0
    stopped: str | None = None


class TaskEval(Record):
    """One task's eval: both runs, the verdict, and what differs.

    Attributes:
        score: the scorer's score, from 0 to 1 (1 for a match by the built-in scorers).
        differences: what differs, one line each (empty for a match).
    """

    task_id: str
    name: str
    verdict: Verdict
    score: float
    differences: list[str] = Field(default_factory=list)
    recorded: EvalRun
    candidate: EvalRun


class EvalTotals(Record):
    """The eval's totals: verdicts, and the recorded runs' figures against the new runs'."""

    tasks: int = 0
    matches: int = 0
    diffs: int = 0
    recorded_tokens: int = 0
    candidate_tokens: int = 0
    recorded_cost: float = 0.0
    candidate_cost: float = 0.0
    recorded_latency: float = 0.0
    candidate_latency: float = 0.0

    @classmethod
    def of(cls, tasks: list[TaskEval]) -> EvalTotals:
        return cls(
            tasks=len(tasks),
            matches=sum(t.verdict is Verdict.MATCH for t in tasks),
            diffs=sum(t.verdict is Verdict.DIFF for t in tasks),
            recorded_tokens=sum(t.recorded.tokens for t in tasks),
            candidate_tokens=sum(t.candidate.tokens for t in tasks),
            recorded_cost=sum(t.recorded.cost for t in tasks),
            candidate_cost=sum(t.candidate.cost for t in tasks),
            recorded_latency=sum(t.recorded.latency for t in tasks),
            candidate_latency=sum(t.candidate.latency for t in tasks),
        )


class EvalReport(Record):
    """A whole eval: the model tried, the scorer, each task's eval in the listing's order, and the totals."""

    model: str
    scorer: str
    tasks: list[TaskEval]
    totals: EvalTotals

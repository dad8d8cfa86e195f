"""What a replay check found for one task: it replays, or diverges (where, and the fix), or cannot be run."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Divergence", "ReplayOutcome"]


@dataclass(frozen=True)
class Divergence:
    """Where the code installed now leaves the recorded journal.

    Attributes:
        seq: the journal position.
        recorded: what the journal holds there, as ``"<kind> <name>"`` (e.g. ``"tool charge"``),
            or ``"nothing"`` where the code asks for a call past a finished journal; where a
            completed task's replay ends otherwise, how it ended: ``"result <JSON>"``.
        requested: what the code asks for there, as ``"<kind> <name>"``, or ``"nothing"``
            where the workflow ended before the journal did; ``"result <JSON>"`` or
            ``"failure <error>"`` where it now ends otherwise (docs/changing-code.md).
        fix: one line saying how to keep both: the ``ctx.patched(...)`` change to make.
    """

    seq: int
    recorded: str
    requested: str
    fix: str


@dataclass(frozen=True)
class ReplayOutcome:
    """The replay check of one task.

    Attributes:
        task_id: the task checked.
        replayed: how many journaled operations were replayed before the check ended.
        divergence: the first divergence, or None when everything recorded replays.
        problem: why the task could not be checked (its code is refused or missing here,
            its journal cannot be read), or None.
    """

    task_id: str
    replayed: int
    divergence: Divergence | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """Whether every recorded operation replays with the code installed now."""
        return self.divergence is None and self.problem is None

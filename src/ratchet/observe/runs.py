"""What one run of a task (a worker's turn at it) reports: the task, if the run ended it.

A task ends in exactly one run, so the span of the task (and its duration
in the metrics) is reported by the run that found it unfinished and left it
finished. (Steps are reported as
their end is written: `ratchet.observe.spans.step_span`.) A run also counts
a takeover when it picks up a task left running.
"""

from __future__ import annotations

from ..records import TaskStatus
from ..store import StateStore
from .recording import current_recorder, note_takeover
from .spans import task_span, tracing_on

__all__ = ["RunReport"]


class RunReport:
    """The task's state as a run begins, to report what the run ended."""

    def __init__(self, store: StateStore, task_id: str, was_over: bool) -> None:
        self.store = store
        self.task_id = task_id
        self.was_over = was_over

    @classmethod
    async def begin(cls, store: StateStore, task_id: str) -> RunReport | None:
        """Read the task before its run (nothing when neither tracing nor metrics are on)."""
        if current_recorder() is None and not tracing_on():
            return None
        task = await store.get_task(task_id)
        if task.status is TaskStatus.RUNNING:
            note_takeover()  # left running: its worker died, lost its lease, or shut down
        return cls(store, task_id, task.status.is_terminal)

    async def ended(self) -> None:
        """Report the task if this run ended it."""
        recorder = current_recorder()
        if self.was_over or (recorder is None and not tracing_on()):
            return
        task = await self.store.get_task(self.task_id)
        if task.status.is_terminal:
            task_span(task)
            if recorder is not None:  # from its first start: the wait in the queue is a gauge of its own
                began = task.started_at or task.created_at
                seconds = max((task.updated_at - began).total_seconds(), 0.0)
                recorder.task_ended(task.agent, str(task.status), seconds)

"""Replay one task's journal in a copy held in memory, against the code installed now."""

from __future__ import annotations

from collections.abc import Callable

from ...store import StateStore
from ...trust.code import CodeTrust
from ..workflow import Workflow, load_workflow
from .outcome import ReplayOutcome

__all__ = ["replay_check_task"]


async def replay_check_task(
    store: StateStore,
    task_id: str,
    *,
    load: Callable[[str], Workflow] = load_workflow,
    trust: CodeTrust | None = None,
) -> ReplayOutcome:
    """Replay task `task_id`'s journal from `store` against the code `load` finds now; write nothing.

    Raises:
        TaskNotFound: no task has that id.
    """
    raise NotImplementedError("replay_check_task: being built (issue 32)")

"""`Runtime.replay_check`: whether the code installed now still replays the stored tasks' journals.

`ReplayCheckMethods` is part of `Runtime`. It picks tasks as `list_tasks`
does (by default those that have not ended: the ones a worker may resume
with this code) and checks each with `replay_check_task`
(`ratchet.engine.replay`): the workflow runs over a copy of the task's
journal in memory, nothing runs live, nothing is written to the store.
``ratchet replay-check`` and `ratchet.testing.assert_replays` call it
(docs/changing-code.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

from typing_extensions import Unpack

from ..engine.replay import ReplayOutcome, replay_check_task
from ..engine.workflow import Workflow, load_workflow
from ..errors import CorruptRecord, InputError, TaskNotFound
from ..records import TaskFilter, TaskStatus
from ..store import StateStore
from ..trust.code import CodeTrust
from ..trust.seal import SigningKey
from .reading import TaskFilters, task_filter

__all__ = ["NOT_ENDED", "ReplayCheckMethods"]

NOT_ENDED = frozenset(status for status in TaskStatus if not status.is_terminal)
"""The statuses a replay check picks when no filter names one: the tasks a worker may still resume."""


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    @property
    def trust(self) -> CodeTrust: ...

    @property
    def signing_key(self) -> SigningKey: ...


class ReplayCheckMethods:
    """``Runtime.replay_check``."""

    async def replay_check(
        self: _Host,
        where: TaskFilter | None = None,
        /,
        *,
        task_ids: Sequence[str] | None = None,
        load: Callable[[str], Workflow] = load_workflow,
        **filters: Unpack[TaskFilters],
    ) -> list[ReplayOutcome]:
        """Replay the stored journals of the tasks picked against the code installed now; oldest first.

        ``await rt.replay_check()`` checks every task that has not ended;
        ``rt.replay_check(name="checkout", status="completed")`` the tasks
        the filters of `list_tasks` keep (without a ``status`` or
        ``waiting_on``, those that have not ended); a `TaskFilter` is used
        as it is (``ratchet.records.ALL_TASKS``: every task); `task_ids`
        names the tasks instead. No model or tool is called and nothing is
        written: each outcome says whether the task replays, where it
        diverges (and the ``ctx.patched`` fix), or why it cannot be checked.

        Args:
            load: finds a workflow by its reference (default: as a worker does).

        A task whose stored record cannot be read is an outcome with that
        problem; one deleted while the others are checked is left out.

        Raises:
            InputError: a filter is not one, or tasks are named both ways.
            TaskNotFound: a task of `task_ids` does not exist (nothing is checked).
        """
        ids = await _picked(self.store, where, task_ids, filters)
        trust, key = self.trust, self.signing_key
        loaded: dict[str, Workflow] = {}

        def load_once(reference: str) -> Workflow:
            # Each reference once per check: a thousand tasks of one workflow find it once.
            if reference not in loaded:
                loaded[reference] = load(reference)
            return loaded[reference]

        outcomes = []
        for task_id in ids:
            try:
                outcome = await replay_check_task(self.store, task_id, load=load_once, trust=trust, key=key)
            except CorruptRecord as unreadable:  # one bad row never hides the other tasks' outcomes
                outcome = ReplayOutcome(task_id, 0, problem=unreadable.message)
            except TaskNotFound:
                if task_ids is not None:
                    raise
                continue  # deleted since it was listed: there is nothing left to resume
            outcomes.append(outcome)
        return outcomes


async def _picked(
    store: StateStore, where: TaskFilter | None, task_ids: Sequence[str] | None, filters: TaskFilters
) -> list[str]:
    """The ids of the tasks to check, oldest first (`task_ids` in their order, each once)."""
    if sum(given is not None and given != {} for given in (where, task_ids, filters)) > 1:
        raise InputError("name the tasks once: task ids, a TaskFilter or filters")
    if task_ids is not None:
        ids = list(dict.fromkeys(task_ids))
        found = {task.id for task in await store.get_tasks(ids)}
        for task_id in ids:
            if task_id not in found:
                await store.get_task(task_id)  # raises TaskNotFound (or says why it cannot be read)
        return ids
    if where is None:
        where = task_filter(**filters)
        if not where.statuses and not where.waiting_on:
            where = dataclasses.replace(where, statuses=NOT_ENDED)
    return [row.id for row in await store.list_task_rows(where)]

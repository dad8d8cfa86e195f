"""``Runtime.evaluate``: the Python face of ``ratchet eval``."""

from __future__ import annotations

import dataclasses
from typing import Protocol

from typing_extensions import Unpack

from ...errors import InputError
from ...providers.registry import resolve_model
from ...records import TaskFilter
from ...store import StateStore
from ...trust.code import CodeTrust
from ...trust.seal import SigningKey
from ..reading import TaskFilters, task_filter
from .report import EvalReport
from .running import COMPLETED_ONLY, eval_tasks, selected_tasks
from .scoring import load_scorer

__all__ = ["EvalMethods"]


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    @property
    def trust(self) -> CodeTrust: ...

    @property
    def signing_key(self) -> SigningKey: ...


class EvalMethods:
    """``Runtime.evaluate``."""

    async def evaluate(
        self: _Host,
        model: str,
        /,
        *,
        scorer: str | None = None,
        where: TaskFilter | None = None,
        **filters: Unpack[TaskFilters],
    ) -> EvalReport:
        """Run recorded tasks again with `model`, every tool call answered from their journals; score each.

        Nothing in the world changes: each task runs in a memory store of its
        own, its model calls go to `model`, and its tool calls are served from
        what the task recorded; a call the recording does not have is not run,
        and the task's new run stops there, a diff (docs/evals.md). This
        Runtime's store is only read.

        Args:
            model: the model to try, as ``provider:name`` (``openai:gpt-4o``).
            scorer: ``exact`` (default), ``json-diff``, or ``module:function``
                of your own, loaded under this Runtime's code trust.
            where: the tasks to run again, as a `TaskFilter`; or `filters`, as
                `list_tasks` takes them. Without a status (or wait reason)
                among them, only the tasks that completed.

        Raises:
            InputError: the model or the scorer names nothing usable, a filter
                is not one, or no task matches.
        """
        if where is not None and filters:
            raise InputError("give the tasks as `where` or as filters, not both")
        if where is None:
            where = task_filter(**filters)
        if not where.statuses and not where.waiting_on:  # an eval set is of runs that ended
            where = dataclasses.replace(where, statuses=COMPLETED_ONLY.statuses)
        resolve_model(model)  # a model that cannot be built is bad input, before anything runs
        chosen = load_scorer(scorer, self.trust)
        tasks = await selected_tasks(self.store, where)
        if not tasks:
            raise InputError("no task matches the filter; `ratchet tasks` with the same filters lists them")
        return await eval_tasks(self.store, tasks, model, chosen, trust=self.trust, key=self.signing_key)

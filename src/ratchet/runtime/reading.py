"""The `Runtime`'s reads: one task, a filtered listing of tasks, a task's result as its workflow types it.

`ReadingMethods` is part of `Runtime`; a program reads tasks here rather
than through ``rt.store``. The listing filters as ``ratchet tasks`` and
``GET /api/tasks`` do, through the same store operation (`list_task_rows`),
and reads only the listed tasks' records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar, overload

from ..engine.signature import read_as
from ..engine.workflow import Workflow, load_workflow
from ..errors import CorruptRecord, InputError, TaskNotCompleted
from ..records import Task, TaskFilter, TaskStatus
from ..store import StateStore
from ..trust.code import CodeTrust

__all__ = ["ReadingMethods"]

T = TypeVar("T")

PAGE = 200  # the records read by one query of a listing, as `ratchet tasks --json` reads them


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    @property
    def trust(self) -> CodeTrust: ...

    @property
    def _workflows(self) -> dict[str, Workflow]: ...


class ReadingMethods:
    """``Runtime.get_task``, ``list_tasks`` and ``result``."""

    async def get_task(self: _Host, task_id: str) -> Task:
        """The task as it stands.

        Raises:
            TaskNotFound: no task has that id.
            CorruptRecord: its stored record cannot be read.
        """
        return await self.store.get_task(task_id)

    async def list_tasks(
        self: _Host,
        *,
        status: TaskStatus | str | Iterable[TaskStatus | str] | None = None,
        name: str | None = None,
        agent: str | None = None,
        parent_id: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
        unreadable: list[CorruptRecord] | None = None,
    ) -> list[Task]:
        """The tasks that pass every filter given, oldest first (`newest_first`: newest first).

        Args:
            status: one status (``"waiting"`` or `TaskStatus.WAITING`), or any of several.
            name: exactly this task name.
            agent: exactly this agent name (a workflow's tasks have the workflow's name).
            parent_id: the children of this task.
            since: created at or after this time (UTC if it has no offset).
            until: created before this time.
            limit: at most this many (default: all); `offset` skips that many first.
            unreadable: a stored row that cannot be read is left out (one bad
                row never hides the others); its `CorruptRecord` is added here.

        Raises:
            InputError: a status names none, or `limit` or `offset` is negative.
        """
        if (limit is not None and limit < 0) or offset < 0:
            raise InputError(f"limit {limit!r} and offset {offset!r}: give whole numbers from 0")
        where = TaskFilter(
            statuses=_statuses(status), name=name, agent=agent, parent_id=parent_id, since=since, until=until
        )
        async with self.store.reading() as tx:
            rows = await tx.list_task_rows(
                where, limit=limit, offset=offset, newest_first=newest_first, unreadable=unreadable
            )
            found: dict[str, Task] = {}
            for start in range(0, len(rows), PAGE):  # a bounded number of ids a query
                page = [row.id for row in rows[start : start + PAGE]]
                found.update((task.id, task) for task in await tx.get_tasks(page, unreadable=unreadable))
        return [found[row.id] for row in rows if row.id in found]

    @overload
    async def result(self: _Host, task_id: str) -> Any: ...

    @overload
    async def result(self: _Host, task_id: str, as_type: type[T]) -> T: ...

    async def result(self: _Host, task_id: str, as_type: Any = None) -> Any:
        """The result of a completed task, as its workflow's return annotation types it.

        A result is stored as JSON (a pydantic model as its fields); this reads
        it back as the workflow declares it returns (``-> Order`` gives an
        ``Order``): the workflow handed to this Runtime's `submit` or `run`,
        or else the one its reference names, loaded as `trust` admits. With
        `as_type`, it is read as that type instead, and no code is loaded. A
        workflow with no return annotation gives the JSON as stored.

        Raises:
            TaskNotFound: no task has that id.
            TaskNotCompleted: the task failed, was cancelled or has not ended.
            InvalidResult: the result does not fit the type.
            CodeUnavailable: its workflow is refused here or does not load.
        """
        task = await self.store.get_task(task_id)
        if task.status is not TaskStatus.COMPLETED:
            raise TaskNotCompleted(task=task)
        if as_type is not None:
            return read_as(task.result, as_type, what=f"the result of task {task.id}")
        if task.workflow is None:  # a task no workflow ran (made by hand): its JSON is all there is
            return task.result
        workflow = self._workflows.get(task.workflow)
        if workflow is None:
            with self.trust.enforced():
                workflow = load_workflow(task.workflow)
        return workflow.signature.typed_result(task.result)


def _statuses(status: TaskStatus | str | Iterable[TaskStatus | str] | None) -> frozenset[TaskStatus]:
    if status is None:
        return frozenset()
    given = [status] if isinstance(status, (TaskStatus, str)) else list(status)
    return frozenset(_status(one) for one in given)


def _status(given: TaskStatus | str) -> TaskStatus:
    try:
        return TaskStatus(given.strip().lower() if isinstance(given, str) else given)
    except ValueError:
        names = ", ".join(status.value for status in TaskStatus)
        raise InputError(f"unknown status {given!r}; use one of {names}") from None

"""The `Runtime`'s reads: one task, a filtered listing of tasks, a task's result as its workflow types it.

`ReadingMethods` is part of `Runtime`; a program reads tasks here rather
than through ``rt.store``. The listing filters as ``ratchet tasks`` and
``GET /api/tasks`` do, through the same store operation (`list_task_rows`),
and reads only the listed tasks' records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypedDict, TypeVar, overload

from typing_extensions import Unpack

from ..engine.signature import read_as
from ..engine.workflow import Workflow, load_workflow
from ..errors import CorruptRecord, InputError, TaskNotCompleted
from ..limits import check_labels
from ..records import OLDEST_FIRST, Task, TaskFilter, TaskOrder, TaskSort, TaskStatus, WaitReason
from ..records.listing import search_words
from ..store import StateStore
from ..trust.code import CodeTrust

__all__ = ["ReadingMethods", "TaskFilters", "task_filter"]

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
    """``Runtime.get_task``, ``list_tasks``, ``count_tasks`` and ``result``."""

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
        sort: str | TaskOrder = OLDEST_FIRST,
        newest_first: bool = False,
        limit: int | None = None,
        offset: int = 0,
        unreadable: list[CorruptRecord] | None = None,
        **filters: Unpack[TaskFilters],
    ) -> list[Task]:
        """The tasks that pass every filter given (`TaskFilters`), oldest first.

        ``rt.list_tasks(search="invoice", labels={"team": "ops"}, status="failed")``
        lists as ``ratchet tasks --search invoice --label team=ops --status
        failed`` does (docs/finding-tasks.md).

        Args:
            sort: the column to order by: ``created`` (default), ``updated``,
                ``name``, ``status`` or ``cost``; ``-cost`` descending.
            newest_first: descending (the newest first, for ``created``).
            limit: at most this many (default: all); `offset` skips that many first.
            unreadable: a stored row that cannot be read is left out (one bad
                row never hides the others); its `CorruptRecord` is added here.
            filters: see `TaskFilters`.

        Raises:
            InputError: a filter is not one (a status that names none, a
                search with no word), `sort` names no column, or `limit` or
                `offset` is negative.
        """
        if (limit is not None and limit < 0) or offset < 0:
            raise InputError(f"limit {limit!r} and offset {offset!r}: give whole numbers from 0")
        order = _order(sort, newest_first)
        where = task_filter(**filters)
        async with self.store.reading() as tx:
            rows = await tx.list_task_rows(
                where, order=order, limit=limit, offset=offset, unreadable=unreadable
            )
            found: dict[str, Task] = {}
            for start in range(0, len(rows), PAGE):  # a bounded number of ids a query
                page = [row.id for row in rows[start : start + PAGE]]
                found.update((task.id, task) for task in await tx.get_tasks(page, unreadable=unreadable))
        return [found[row.id] for row in rows if row.id in found]

    async def count_tasks(self: _Host, **filters: Unpack[TaskFilters]) -> int:
        """How many tasks pass every filter given (`TaskFilters`), as ``ratchet tasks --count`` says.

        Raises:
            InputError: a filter is not one.
        """
        return await self.store.count_task_rows(task_filter(**filters))

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


class TaskFilters(TypedDict, total=False):
    """The filters `Runtime.list_tasks` and `count_tasks` take; a task passes when it passes every one.

    Attributes:
        status: one status (``"waiting"`` or `TaskStatus.WAITING`), or any of several.
        waiting_on: what a waiting task waits on (``"approval"``), or any of several.
        name: exactly this task name.
        agent: exactly this agent name (a workflow's tasks have the workflow's name).
        model: exactly this model (``openai:gpt-4o-mini``).
        parent_id: the children of this task.
        id_prefix: an id that starts with this.
        labels: every one of these labels (``{"team": "ops"}``).
        search: words each of which starts a word of the task's name,
            instruction, or (once it ended) result or error; any case.
        since: created at or after this time (UTC if it has no offset).
        until: created before this time.
        min_cost: cost at least this many US dollars.
        max_cost: cost at most this many.
    """

    status: TaskStatus | str | Iterable[TaskStatus | str] | None
    waiting_on: WaitReason | str | Iterable[WaitReason | str] | None
    name: str | None
    agent: str | None
    model: str | None
    parent_id: str | None
    id_prefix: str | None
    labels: Mapping[str, str] | None
    search: str | None
    since: dt.datetime | None
    until: dt.datetime | None
    min_cost: float | None
    max_cost: float | None


def task_filter(**filters: Unpack[TaskFilters]) -> TaskFilter:
    """The `TaskFilter` of `filters`, each checked as ``ratchet tasks`` checks its options.

    Raises:
        InputError: a status or wait reason names none, a label is no label,
            the search has no word, a cost is negative.
    """
    unknown = set(filters) - set(TaskFilters.__annotations__)
    if unknown:
        raise InputError(
            f"unknown filter {sorted(unknown)[0]!r}; the filters are {', '.join(TaskFilters.__annotations__)}"
        )
    labels = filters.get("labels") or {}
    check_labels(labels, "labels")
    search = filters.get("search")
    if search is not None and not search_words(search):
        raise InputError(f"search {search[:60]!r} has no word to search for (letters or digits)")
    for bound in ("min_cost", "max_cost"):
        cost = filters.get(bound)
        if cost is not None and not (isinstance(cost, int | float) and 0 <= cost < float("inf")):
            raise InputError(f"{bound} {cost!r}: give an amount of US dollars from 0")
    return TaskFilter(
        statuses=_statuses(filters.get("status")),
        waiting_on=_reasons(filters.get("waiting_on")),
        name=filters.get("name"),
        agent=filters.get("agent"),
        model=filters.get("model"),
        parent_id=filters.get("parent_id"),
        id_prefix=filters.get("id_prefix"),
        labels=tuple(labels.items()),
        search=search,
        since=filters.get("since"),
        until=filters.get("until"),
        min_cost=filters.get("min_cost"),
        max_cost=filters.get("max_cost"),
    )


def _order(sort: str | TaskOrder, newest_first: bool) -> TaskOrder:
    if isinstance(sort, TaskOrder):
        return TaskOrder(sort.by, sort.descending or newest_first)
    column = sort.strip().lower()
    descending = newest_first or column.startswith("-")
    try:
        return TaskOrder(TaskSort(column.lstrip("-")), descending)
    except ValueError:
        names = ", ".join(by.value for by in TaskSort)
        raise InputError(f"sort {sort!r}: sort by one of {names} (-name: descending)") from None


def _reasons(given: WaitReason | str | Iterable[WaitReason | str] | None) -> frozenset[WaitReason]:
    if given is None:
        return frozenset()
    listed = [given] if isinstance(given, (WaitReason, str)) else list(given)
    try:
        return frozenset(WaitReason(one.strip().lower() if isinstance(one, str) else one) for one in listed)
    except ValueError:
        names = ", ".join(reason.value for reason in WaitReason)
        raise InputError(f"waiting_on {given!r}: a task waits on one of {names}") from None


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

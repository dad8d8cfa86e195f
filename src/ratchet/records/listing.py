"""What a task listing asks for (`TaskFilter`, `TaskOrder`, `TaskCursor`) and what it gets back (`TaskRow`).

`ratchet tasks`, ``GET /api/tasks`` and `Runtime.list_tasks` read tasks
through one store operation (`list_task_rows`, store/ops/task_rows.py) that
filters, orders and pages in the database and returns only the columns a
listing shows, never the whole record: listing 100,000 tasks reads as many
rows as the page holds.

`TaskFilter.matches` and `TaskOrder.key` are the reference the SQL stores
are held to (the memory store runs them): docs/finding-tasks.md says the
same in words. A page ends at a `TaskCursor`, the last row's place in the
order; the next page is what comes after that place, so a task made while
a person pages neither repeats a row nor shifts the page (keyset paging).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ..errors import InputError
from . import compact_json
from .task import Task, TaskStatus, WaitReason

__all__ = [
    "ALL_TASKS",
    "MAX_WORD_CHARS",
    "OLDEST_FIRST",
    "SEARCHED_CHARS",
    "TaskCursor",
    "TaskFilter",
    "TaskOrder",
    "TaskRow",
    "TaskSort",
    "search_words",
    "task_words",
]

# A word longer than this is searched by its first MAX_WORD_CHARS characters (on every store alike).
MAX_WORD_CHARS = 64
# How much of each searched text (name, instruction, result, error) is indexed: the start of it.
SEARCHED_CHARS = 64 * 1024

_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script; everything else parts words


def search_words(text: str) -> list[str]:
    """The words of `text` as the search index keeps them, in order.

    A word is a run of letters and digits; case is folded and accents are
    dropped (``Café`` is ``cafe``, ``Straße`` is ``strasse``); everything else
    (spaces, punctuation, ``"``, ``*``, ``(``) only parts words. Each store
    indexes these words exactly (SQLite's FTS5, PostgreSQL's tsvector), so
    a search finds the same tasks on each.
    """
    folded = text.casefold()
    if not folded.isascii():
        folded = unicodedata.normalize("NFKD", folded)
        folded = "".join(c for c in folded if unicodedata.category(c)[0] != "M")
    return [word[:MAX_WORD_CHARS] for word in _WORD.findall(folded)]


def task_words(task: Task) -> list[str]:
    """The words a search finds `task` by, each once: its name's, its instruction's and, once it
    ended, its result's (as JSON text unless it is text) and its error's."""
    texts = [task.name, task.instruction]
    if task.status.is_terminal:
        if task.result is not None:
            texts.append(task.result if isinstance(task.result, str) else compact_json.encode(task.result))
        if task.error:
            texts.append(task.error)
    return list(dict.fromkeys(word for text in texts for word in search_words(text[:SEARCHED_CHARS])))


@dataclass(frozen=True)
class TaskFilter:
    """Which tasks a listing wants: those that pass every field given; a field left None (or
    empty) does not filter.

    Attributes:
        statuses: any of these statuses.
        waiting_on: waiting on any of these (so: waiting).
        name: exactly this task name.
        agent: exactly this agent name.
        model: exactly this model (``openai:gpt-4o-mini``).
        code_version: started on exactly this version of its code (``Task.code_version``).
        parent_id: the children of this task.
        id_prefix: an id that starts with this.
        labels: every one of these ``(key, value)`` labels.
        search: text whose every word starts a word of the task's name,
            instruction, or (once it ended) result or error (`search_words`).
        since: created at or after this time.
        until: created before this time.
        min_cost: cost at least this much (US dollars).
        max_cost: cost at most this much.
        updated_before: last changed before this time (for an ended task:
            it ended then); what retention asks for, not a filter people type.
    """

    statuses: frozenset[TaskStatus] = frozenset()
    waiting_on: frozenset[WaitReason] = frozenset()
    name: str | None = None
    agent: str | None = None
    model: str | None = None
    code_version: str | None = None
    parent_id: str | None = None
    id_prefix: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    search: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    min_cost: float | None = None
    max_cost: float | None = None
    updated_before: dt.datetime | None = None

    @property
    def words(self) -> list[str]:
        """The search's words, each once (none without a search)."""
        return list(dict.fromkeys(search_words(self.search))) if self.search else []

    def matches(self, task: Task, words: Sequence[str] | None = None) -> bool:
        """Whether `task` passes every filter: the memory store's reference for the SQL.

        `words` is `self.words`, when the caller computed it once for many tasks.
        """
        wanted = self.words if words is None else words
        return (
            (not self.statuses or task.status in self.statuses)
            and (not self.waiting_on or task.waiting_on in self.waiting_on)
            and (self.name is None or task.name == self.name)
            and (self.agent is None or task.agent == self.agent)
            and (self.model is None or task.model == self.model)
            and (self.code_version is None or task.code_version == self.code_version)
            and (self.parent_id is None or task.parent_id == self.parent_id)
            and (self.id_prefix is None or task.id.startswith(self.id_prefix))
            and all(task.labels.get(key) == value for key, value in self.labels)
            and (self.since is None or task.created_at >= _utc(self.since))
            and (self.until is None or task.created_at < _utc(self.until))
            and (self.min_cost is None or task.cost >= self.min_cost)
            and (self.max_cost is None or task.cost <= self.max_cost)
            and (self.updated_before is None or task.updated_at < _utc(self.updated_before))
            and (not wanted or _has_words(task_words(task), wanted))
        )


def _has_words(found: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(word.startswith(prefix) for word in found) for prefix in wanted)


ALL_TASKS = TaskFilter()
"""The filter that keeps every task."""


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment


@dataclass(frozen=True)
class TaskRow:
    """A task as a listing shows it: the columns the store keeps beside its record."""

    id: str
    name: str
    status: TaskStatus
    waiting_on: WaitReason | None
    agent: str | None
    parent_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    model: str | None = None
    cost: float = 0.0

    @property
    def status_text(self) -> str:
        """The status as people read it: ``waiting(approval)``, ``running``."""
        return f"{self.status}({self.waiting_on})" if self.waiting_on else str(self.status)


class TaskSort(StrEnum):
    """The column a listing is ordered by; ties go by creation time, then id."""

    CREATED = "created"
    UPDATED = "updated"
    NAME = "name"
    STATUS = "status"
    COST = "cost"


SortValue = str | float | dt.datetime


@dataclass(frozen=True)
class TaskOrder:
    """How a listing is ordered: by one column, ascending or not.

    Every order is total: `key` ends with the creation time and the id, so
    each row has one place, and a page can end at it (`TaskCursor`). Names
    and ids sort by their characters' code points, as Python compares them.
    """

    by: TaskSort = TaskSort.CREATED
    descending: bool = False

    def key(self, row: TaskRow) -> tuple[SortValue, ...]:
        """`row`'s place in this order (ascending; `descending` reverses it)."""
        if self.by is TaskSort.CREATED:
            return (row.created_at, row.id)
        return (self.value_of(row), row.created_at, row.id)

    def value_of(self, row: TaskRow) -> SortValue:
        """The value of the sorted column in `row`."""
        if self.by is TaskSort.UPDATED:
            return row.updated_at
        if self.by is TaskSort.NAME:
            return row.name
        if self.by is TaskSort.STATUS:
            return str(row.status)
        if self.by is TaskSort.COST:
            return row.cost
        return row.created_at

    def __str__(self) -> str:
        return ("-" if self.descending else "") + str(self.by)


OLDEST_FIRST = TaskOrder()
"""The default order: by creation time, oldest first."""

_CURSOR_MAX_CHARS = 2048
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class TaskCursor:
    """Where a page ended: its last row's place in `order`; the next page lists what comes after it.

    `encode` makes it the opaque text an API hands out (``next_cursor``),
    `decode` reads it back and refuses text no listing made.
    """

    order: TaskOrder
    value: SortValue
    created_at: dt.datetime
    id: str

    @classmethod
    def after(cls, row: TaskRow, order: TaskOrder) -> TaskCursor:
        """The cursor of a page that ends at `row`."""
        return cls(order, order.value_of(row), row.created_at, row.id)

    def key(self) -> tuple[SortValue, ...]:
        """Its place, as `TaskOrder.key` gives a row's."""
        if self.order.by is TaskSort.CREATED:
            return (self.created_at, self.id)
        return (self.value, self.created_at, self.id)

    def encode(self) -> str:
        """The cursor as URL-safe text."""
        value = self.value
        shown: object = _micros(value) if isinstance(value, dt.datetime) else value
        if self.order.by is TaskSort.CREATED:
            shown = None
        text = json.dumps([str(self.order), shown, _micros(self.created_at), self.id], separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> TaskCursor:
        """The cursor `encode` wrote as `text`.

        Raises:
            InputError: `text` is not one (changed, cut short, or of another program).
        """
        refused = InputError("cursor: not a cursor this listing gave; start again without it")
        if len(text) > _CURSOR_MAX_CHARS or not text.isascii():
            raise refused
        try:
            fields = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            sort, value, created, task_id = fields
            order = TaskOrder(TaskSort(sort.lstrip("-")), sort.startswith("-"))
            at = _from_micros(created)
            if not isinstance(task_id, str) or not task_id:
                raise ValueError("no id")
            return cls(order, _sort_value(order.by, value, at), at, task_id)
        except (ValueError, TypeError, AttributeError, OverflowError, binascii.Error):
            raise refused from None


def _sort_value(by: TaskSort, value: object, created_at: dt.datetime) -> SortValue:
    if by is TaskSort.CREATED and value is None:
        return created_at
    if by is TaskSort.UPDATED:
        return _from_micros(value)
    if by in (TaskSort.NAME, TaskSort.STATUS) and isinstance(value, str):
        return value
    if by is TaskSort.COST and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ValueError("the value does not fit the order")


def _micros(moment: dt.datetime) -> int:
    return (_utc(moment) - _EPOCH) // _MICRO


def _from_micros(value: object) -> dt.datetime:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("not a time")
    return _EPOCH + dt.timedelta(microseconds=value)

"""A task listing's filters and order as a person types them, made into a `TaskFilter` and a `TaskOrder`.

One parser for every surface: `ratchet tasks` hands it its options, ``GET
/api/tasks`` its query parameters, each naming the fields its own way
(`cli_option`: ``--min-cost``; `query_parameter`: ``min_cost``). Every value
is checked before a store is opened: a bad one is one line naming it as the
caller spells it, never an empty listing that looks like an answer, and
never a store's error (what reaches a store is plain values: the search is
only words, a label only a key and a value; docs/finding-tasks.md).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..limits import MAX_NAME_CHARS, check_code_version, check_labels, check_text, utf8_problem
from ..policy import is_duration, parse_duration
from ..records import TaskFilter, TaskOrder, TaskSort, TaskStatus, WaitReason, utcnow
from ..records.listing import search_words

__all__ = [
    "MAX_SEARCH_CHARS",
    "MAX_SEARCH_WORDS",
    "FilterText",
    "Spelling",
    "cli_option",
    "parse_filter",
    "parse_iso_time",
    "parse_labels",
    "parse_order",
    "parse_past_time",
    "parse_status",
    "query_parameter",
]

MAX_SEARCH_CHARS = 1000
MAX_SEARCH_WORDS = 16

Spelling = Callable[[str], str]
"""How a surface names a field of `FilterText` (``min_cost``) in its messages (``--min-cost``)."""


def cli_option(field: str) -> str:
    """A field as `ratchet tasks` spells its option: ``--min-cost``."""
    return "--" + field.replace("_", "-")


_PARAMETER_NAMES = {"since": "created_after", "until": "created_before"}


def query_parameter(field: str) -> str:
    """A field as ``GET /api/tasks`` spells its query parameter: ``min_cost``, ``created_after``."""
    return _PARAMETER_NAMES.get(field, field)


@dataclass(frozen=True)
class FilterText:
    """The filters as typed: each a text (or several, for a repeatable one); None or empty: not given."""

    status: Sequence[str] = ()
    waiting_on: Sequence[str] = ()
    name: str | None = None
    agent: str | None = None
    model: str | None = None
    code_version: str | None = None
    parent: str | None = None
    id_prefix: str | None = None
    label: Sequence[str] = ()
    search: str | None = None
    since: str | None = None
    until: str | None = None
    min_cost: str | None = None
    max_cost: str | None = None


def parse_filter(
    given: FilterText, spell: Spelling = cli_option, *, now: dt.datetime | None = None
) -> TaskFilter:
    """The filter `given` asks for.

    Raises:
        InputError: a value is not one its field takes (a status, a time, a
            label, an amount), is blank, too long or not storable text, or
            two values contradict each other (``since`` after ``until``).
    """
    now = now or utcnow()
    after = None if given.since is None else parse_past_time(spell("since"), given.since, now=now)
    before = None if given.until is None else parse_past_time(spell("until"), given.until, now=now)
    if after is not None and before is not None and after >= before:
        raise InputError(
            f"{spell('since')} ({after.isoformat()}) must be before {spell('until')} ({before.isoformat()})"
        )
    least = None if given.min_cost is None else _cost(spell("min_cost"), given.min_cost)
    most = None if given.max_cost is None else _cost(spell("max_cost"), given.max_cost)
    if least is not None and most is not None and least > most:
        raise InputError(f"{spell('min_cost')} ({least}) is more than {spell('max_cost')} ({most})")
    return TaskFilter(
        statuses=frozenset(parse_status(text, spell("status")) for text in given.status),
        waiting_on=frozenset(_wait_reason(text, spell("waiting_on")) for text in given.waiting_on),
        name=_text(spell("name"), given.name),
        agent=_text(spell("agent"), given.agent),
        model=_text(spell("model"), given.model),
        code_version=None
        if given.code_version is None
        else check_code_version(given.code_version, spell("code_version")),
        parent_id=_text(spell("parent"), given.parent),
        id_prefix=_text(spell("id_prefix"), given.id_prefix),
        labels=tuple(parse_labels(spell("label"), given.label).items()),
        search=_search(spell("search"), given.search),
        since=after,
        until=before,
        min_cost=least,
        max_cost=most,
    )


def parse_order(text: str, spell: Spelling = cli_option, *, descending: bool = False) -> TaskOrder:
    """The order `text` names: a column (``created``, ``updated``, ``name``, ``status``, ``cost``),
    descending with a leading ``-`` (or `descending`).

    Raises:
        InputError: it names no column a listing sorts by.
    """
    column = text.strip().lower()
    if column.startswith("-"):
        column, descending = column[1:], True
    try:
        return TaskOrder(TaskSort(column), descending)
    except ValueError:
        names = ", ".join(sort.value for sort in TaskSort)
        raise InputError(
            f"{spell('sort')}: {_shown(text)} is no column to sort by; use one of {names} (-name: descending)"
        ) from None


def parse_status(text: str, option: str = "--status") -> TaskStatus:
    """Return the task status `text` names.

    Raises:
        InputError: `text` names no status.
    """
    try:
        return TaskStatus(text.strip().lower())
    except ValueError:
        names = ", ".join(status.value for status in TaskStatus)
        raise InputError(f"{option}: unknown status {_shown(text)}; use one of {names}") from None


def _wait_reason(text: str, option: str) -> WaitReason:
    try:
        return WaitReason(text.strip().lower())
    except ValueError:
        names = ", ".join(reason.value for reason in WaitReason)
        raise InputError(f"{option}: {_shown(text)} is nothing a task waits on; use one of {names}") from None


def parse_iso_time(option: str, text: str) -> dt.datetime | None:
    """The time `text` writes in ISO 8601, in UTC (UTC unless it has an offset); None if it writes none.

    Raises:
        InputError: its offset moves it out of the range of dates (`option` named).
    """
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    try:
        return when.astimezone(dt.UTC)
    except OverflowError:  # an offset that moves it past year 9999 or before year 1
        raise InputError(
            f"{option}: {_shown(text)} is out of the range of dates; give a time in UTC"
        ) from None


def parse_past_time(option: str, text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """A time given to `option`: ISO 8601 (UTC unless it has an offset), or how long ago (90s, 10m, 2h, 7d).

    Raises:
        InputError: neither.
    """
    when = parse_iso_time(option, text)
    if when is not None:
        return when
    if not is_duration(text):
        raise InputError(
            f"{option}: {_shown(text)} is neither a time (2026-12-01T09:00:00Z, UTC unless an offset "
            "is given) nor how long ago (90s, 10m, 2h, 7d)"
        )
    try:
        return (now or utcnow()) - dt.timedelta(seconds=parse_duration(text))
    except InputError as error:
        raise InputError(f"{option}: {error.message}") from None
    except OverflowError:
        raise InputError(f"{option}: {_shown(text)} reaches before year 1") from None


def _text(option: str, value: str | None) -> str | None:
    """A value matched exactly (a name, an id): not blank, not too long, storable text."""
    if value is None:
        return None
    if not value.strip():
        raise InputError(f"{option} needs a value; leave it out not to filter by it")
    if len(value) > MAX_NAME_CHARS:
        raise InputError(f"{option} is {len(value)} characters, more than the limit of {MAX_NAME_CHARS}")
    problem = utf8_problem(value)
    if problem is not None:
        raise InputError(f"{option} is not valid UTF-8: {problem}")
    check_text(value, option)
    return value


def parse_labels(option: str, given: Sequence[str]) -> dict[str, str]:
    """The labels given as ``KEY=VALUE`` texts (`option` repeated), each checked (`check_labels`).

    Raises:
        InputError: one is not ``KEY=VALUE``, names a key twice, or is no label.
    """
    labels: dict[str, str] = {}
    for text in given:
        key, equals, value = text.partition("=")
        if not equals:
            raise InputError(f"{option}: {_shown(text)} is not KEY=VALUE; e.g. {option} team=ops")
        key = key.strip()
        if key in labels:
            raise InputError(f"{option}: {_shown(key)} is given twice; a task has one value for each label")
        check_labels({key: value}, option)
        labels[key] = value
    check_labels(labels, option)
    return labels


def _search(option: str, text: str | None) -> str | None:
    if text is None:
        return None
    if len(text) > MAX_SEARCH_CHARS:
        raise InputError(f"{option} is {len(text)} characters, more than the limit of {MAX_SEARCH_CHARS}")
    words = list(dict.fromkeys(search_words(text)))
    if not words:
        raise InputError(f"{option}: {_shown(text)} has no word to search for (letters or digits)")
    if len(words) > MAX_SEARCH_WORDS:
        raise InputError(f"{option}: {len(words)} words, more than the limit of {MAX_SEARCH_WORDS}")
    return text


def _cost(option: str, text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{option}: {_shown(text)} is not an amount of US dollars (e.g. 0.50)")
    return value


def _shown(text: str) -> str:
    shown = ascii(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."

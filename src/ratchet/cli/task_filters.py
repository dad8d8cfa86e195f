"""The filters of `ratchet tasks` as typed on the command line, made into a `TaskFilter`.

Every one is checked before the store is opened: a bad value is one line and
exit 2, never an empty listing that looks like an answer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from ..errors import InputError
from ..policy import is_duration, parse_duration
from ..records import TaskFilter, TaskStatus, utcnow
from .times import iso_time

__all__ = ["parse_past_time", "parse_status", "task_filter"]


def parse_status(text: str) -> TaskStatus:
    """Return the task status `text` names.

    Raises:
        InputError: `text` names no status.
    """
    try:
        return TaskStatus(text.strip().lower())
    except ValueError:
        names = ", ".join(status.value for status in TaskStatus)
        raise InputError(f"unknown status {text!r}; use one of {names}") from None


def parse_past_time(option: str, text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """A time given to `option`: ISO 8601 (UTC unless it has an offset), or how long ago (90s, 10m, 2h, 7d).

    Raises:
        InputError: neither.
    """
    when = iso_time(option, text)
    if when is not None:
        return when
    if not is_duration(text):
        raise InputError(
            f"{option}: {text!r} is neither a time (2026-12-01T09:00:00Z, UTC unless an offset "
            "is given) nor how long ago (90s, 10m, 2h, 7d)"
        )
    try:
        return (now or utcnow()) - dt.timedelta(seconds=parse_duration(text))
    except InputError as error:
        raise InputError(f"{option}: {error.message}") from None
    except OverflowError:
        raise InputError(f"{option}: {text!r} reaches before year 1") from None


def task_filter(
    *,
    statuses: Sequence[str] = (),
    name: str | None = None,
    agent: str | None = None,
    since: str | None = None,
    until: str | None = None,
    now: dt.datetime | None = None,
) -> TaskFilter:
    """The filter the options of `ratchet tasks` ask for.

    Raises:
        InputError: a status, a time, or an empty name or agent that is no filter at all.
    """
    for option, value in (("--name", name), ("--agent", agent)):
        if value is not None and not value.strip():
            raise InputError(f"{option} needs a value; leave the option out to list every {option[2:]}")
    now = now or utcnow()
    after = None if since is None else parse_past_time("--since", since, now=now)
    before = None if until is None else parse_past_time("--until", until, now=now)
    if after is not None and before is not None and after >= before:
        raise InputError(f"--since ({after.isoformat()}) must be before --until ({before.isoformat()})")
    return TaskFilter(
        statuses=frozenset(parse_status(text) for text in statuses),
        name=name,
        agent=agent,
        since=after,
        until=before,
    )

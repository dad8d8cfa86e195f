"""How long ago, or how soon, a moment is: the times of the CLI's tables (``3m ago``, ``in 2h``).

A table answers "what happened lately" at a glance, and a relative time is
short enough for every column to stay whole at 80 columns. The exact time is
one step away: ``--json`` gives every time in ISO 8601 (UTC, with its
offset), and `ratchet show` a task's own times both ways. docs/cli.md says
which output shows which.

The units are kubectl's (its AGE column), as short as a table needs: ``42s``,
``3m``, ``5h``, ``12d``, counted down (a moment 3 min 59 s ago is ``3m
ago``). Past 30 days a count of days reads worse than the date, so the date
is written instead (local, ``2026-10-01``).
"""

from __future__ import annotations

import datetime as dt

__all__ = ["relative_time"]

# Beyond this, the date says more than a count of days.
DATE_AFTER = dt.timedelta(days=30)

_UNITS = ((86400, "d"), (3600, "h"), (60, "m"), (1, "s"))


def relative_time(moment: dt.datetime | None, now: dt.datetime) -> str:
    """`moment` seen from `now`: ``now``, ``42s ago``, ``3m ago``, ``in 2h``, its date; None is ``-``."""
    if moment is None:
        return "-"
    gap = now - moment
    if abs(gap) >= DATE_AFTER:
        return moment.astimezone().strftime("%Y-%m-%d")
    seconds = int(abs(gap).total_seconds())
    if seconds < 1:
        return "now"
    count, unit = next((seconds // size, unit) for size, unit in _UNITS if seconds >= size)
    return f"{count}{unit} ago" if gap > dt.timedelta(0) else f"in {count}{unit}"

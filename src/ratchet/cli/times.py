"""Times a command line gives (``--at``, ``--since``, ``--until``) in ISO 8601, read as UTC.

Each of those options also takes a duration, which it reads its own way
(``--at`` from now on, ``--since`` and ``--until`` back from now); the ISO form
they read alike, here.
"""

from __future__ import annotations

import datetime as dt

from ..errors import InputError

__all__ = ["iso_time"]


def iso_time(option: str, text: str) -> dt.datetime | None:
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
        raise InputError(f"{option}: {text!r} is out of the range of dates; give a time in UTC") from None

"""`Turns`: the live streams take turns on the event loop, so a replay never holds up a request.

A stream replaying a long history only works: an SQLite read does not wait,
and neither does a write to a socket whose client keeps up. Left alone, one
replay would hold the event loop until its last message, and every other
request (a health check, an approval) would wait for it: with fifty clients
replaying 10,000 events each, ``/api/health`` waited minutes.

So a stream works at most `SLICE` seconds at a time, then waits for a turn.
At most `AT_ONCE` streams hold a turn at once, each for one pass of the
event loop, and the others wait in the order they asked: however many
clients replay, one pass of the loop runs a few slices of their work, and
the server answers its other requests between passes. A turn is never held
while a message is sent, so a client that stops reading slows only its own
stream.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

__all__ = ["AT_ONCE", "SLICE", "Turns"]

SLICE = 0.005
"""The seconds a stream works before it waits for a turn."""

AT_ONCE = 2
"""How many streams take a turn in one pass of the event loop."""


class Turns:
    """The turns the streams of one server take (one instance per server; see the module)."""

    def __init__(self, *, at_once: int = AT_ONCE, slice_seconds: float = SLICE) -> None:
        self._slots = asyncio.Semaphore(at_once)
        self._slice = slice_seconds

    def pacer(self) -> Callable[[], Awaitable[None]]:
        """A stream's pace: await it before each message; it waits for a turn once the slice is spent."""
        until = -math.inf

        async def pace() -> None:
            nonlocal until
            loop = asyncio.get_running_loop()
            if loop.time() < until:
                return
            async with self._slots:  # behind the streams that asked first
                await asyncio.sleep(0)  # held for one pass: the others wait their turn, not in the pass
            until = loop.time() + self._slice

        return pace

"""`LoopBridge`: the event loop a saver's store lives in, reached from any thread or loop.

Ratchet's stores are async, and bound to the loop they were opened in (a
connection, a pool). LangGraph calls a saver's sync methods from a sync
graph's threads and its async methods from an async graph's loop, so every
call is run in the store's loop:

- a coroutine already in that loop is awaited;
- from another loop, it is sent to the store's loop and awaited there
  (`asyncio.wrap_future`);
- from a thread with no loop running, it is sent and waited for, as
  LangGraph's async savers do for their sync methods
  (`asyncio.run_coroutine_threadsafe`). From the store's own loop a sync
  call would wait for itself forever: it is refused.

`LoopBridge.start` runs a loop of its own in a daemon thread, for a saver
opened with ``with`` (a sync program has no loop to lend).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["LoopBridge"]

_R = TypeVar("_R")


class LoopBridge:
    """Runs coroutines in one event loop, from anywhere."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread | None = None) -> None:
        self.loop = loop
        self._thread = thread

    @classmethod
    def start(cls) -> LoopBridge:
        """A bridge to a new loop, run by a daemon thread until `stop`."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="ratchet-langgraph-saver", daemon=True)
        thread.start()
        return cls(loop, thread)

    def stop(self) -> None:
        """End the loop `start` made (nothing for a borrowed loop)."""
        if self._thread is None:
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
        self._thread = None

    def _running(self) -> asyncio.AbstractEventLoop | None:
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None

    async def run(self, work: Callable[[], Awaitable[_R]]) -> _R:
        """Await ``work()`` in the store's loop."""
        if self._running() is self.loop:
            return await work()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_call(work), self.loop))

    def wait(self, work: Callable[[], Awaitable[_R]]) -> _R:
        """Run ``work()`` in the store's loop and wait for it (from a thread that is not that loop's).

        Raises:
            asyncio.InvalidStateError: called from the store's own loop.
        """
        if self._running() is self.loop:
            raise asyncio.InvalidStateError(
                "RatchetSaver's sync methods can't run in the event loop its store lives in: "
                "use the async ones (ainvoke, astream), or open the saver with `with`, not `async with`"
            )
        return asyncio.run_coroutine_threadsafe(_call(work), self.loop).result()


async def _call(work: Callable[[], Awaitable[_R]]) -> _R:
    return await work()

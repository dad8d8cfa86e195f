"""How a command reaches its store: run the command's coroutine, open the store, close it after.

Commands that only read open the store with ``create=False``, so looking never
creates a database; `open_for_task` turns a missing database into the error
that names the task. An SQLite file is checked for damage as it opens, unless
the command was given ``--force-open`` (`skip_integrity_check`, the option's
callback, notes it for the rest of the command).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

from ..errors import StoreNotFound, TaskNotFound
from ..store import StateStore, open_store
from . import interrupts

__all__ = ["integrity_check", "open_for_task", "open_store_for", "run_async", "skip_integrity_check"]

T = TypeVar("T")

# Set once per command, by its --force-open; a context variable, so it reaches the
# store wherever the command opens it without every command passing it along.
_INTEGRITY_CHECK = contextvars.ContextVar("ratchet_integrity_check", default=True)


def skip_integrity_check(force_open: bool) -> bool:
    """Note whether this command opens its store without the integrity check (--force-open)."""
    _INTEGRITY_CHECK.set(not force_open)
    return force_open


def integrity_check() -> bool:
    """Whether this command checks an SQLite file for damage as it opens it."""
    return _INTEGRITY_CHECK.get()


def run_async(work: Coroutine[Any, Any, T], *, on_interrupt: Callable[[], None] | None = None) -> T:
    """Run a command's coroutine to its end in an event loop of its own.

    A Ctrl-C meanwhile cancels it and raises KeyboardInterrupt here once it
    ended, or, given `on_interrupt`, calls that in the loop instead (see
    `ratchet.cli.interrupts`).
    """
    return interrupts.run(work, on_interrupt=on_interrupt)


@contextlib.asynccontextmanager
async def open_store_for(url: str, *, create: bool) -> AsyncIterator[StateStore]:
    """Open the store at `url` for one command and close it afterwards.

    Raises:
        StoreNotFound: `create` is False and the database does not exist.
    """
    store = await open_store(url, create=create, integrity_check=integrity_check())
    try:
        yield store
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def open_for_task(url: str, task_id: str) -> AsyncIterator[StateStore]:
    """Open an existing store to work on one task; no database means no such task."""
    try:
        store = await open_store(url, create=False, integrity_check=integrity_check())
    except StoreNotFound:
        raise TaskNotFound(task_id) from None
    try:
        yield store
    finally:
        await store.close()

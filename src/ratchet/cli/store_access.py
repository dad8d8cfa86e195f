"""How a command reaches its store: run the command's coroutine, open the store, close it after.

Commands that only read open the store with ``create=False``, so looking never
creates a database; `open_for_task` turns a missing database into the error
that names the task.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from ..errors import StoreNotFound, TaskNotFound
from ..store import StateStore, open_store

__all__ = ["open_for_task", "open_store_for", "run_async"]

T = TypeVar("T")


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine to its end."""
    return asyncio.run(work)


@contextlib.asynccontextmanager
async def open_store_for(url: str, *, create: bool) -> AsyncIterator[StateStore]:
    """Open the store at `url` for one command and close it afterwards.

    Raises:
        StoreNotFound: `create` is False and the database does not exist.
    """
    store = await open_store(url, create=create)
    try:
        yield store
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def open_for_task(url: str, task_id: str) -> AsyncIterator[StateStore]:
    """Open an existing store to work on one task; no database means no such task."""
    try:
        store = await open_store(url, create=False)
    except StoreNotFound:
        raise TaskNotFound(task_id) from None
    try:
        yield store
    finally:
        await store.close()

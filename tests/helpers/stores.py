"""Every kind of store the suites run against; a new store joins by adding its URL here.

Each builder takes the test's ``tmp_path`` and returns the URL of a fresh,
empty store. PostgreSQL databases live on `POSTGRES`, the session's
throwaway cluster (`tests.helpers.pg`), started by the first test that asks for one;
each is a copy of its template, a database `open_store` made into a store (a test
of what opening does to a database without Ratchet's schema asks for an empty one);
`discard` drops a test's database when the test is done with it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ratchet.store import StateStore, open_store

from .pg import LazyCluster


def make_store(url: str) -> None:
    """Make the database at `url` a store, as the first `open_store` of it does, and leave it closed."""

    async def open_and_close() -> None:
        store = await open_store(url)
        await store.close()

    # A loop of its own, in a thread of its own: the first test to ask for a database may be
    # running in an event loop already, where a second one cannot start.
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, open_and_close()).result()


POSTGRES = LazyCluster(template=make_store)

STORE_URLS: dict[str, Callable[[Path], str]] = {
    "memory": lambda tmp_path: "memory://",
    "sqlite": lambda tmp_path: "sqlite:///" + str(tmp_path / "r.db"),
    "postgres": lambda tmp_path: POSTGRES.get().create_database(),
}


def sharing_commits(url: str) -> str:
    """`url` with group commit on (by default only SQLite with durability=full has it; docs/stores.md).

    The crash and failover suites run every SQL store this way, so that what they
    prove (each effect once, nothing lost) holds for transactions that share a commit.
    """
    if url.startswith(("postgresql://", "sqlite:///")):
        return url + ("&" if "?" in url else "?") + "group_commit=on"
    return url


def discard(url: str) -> None:
    """Drop the store at `url` if it is a database on the test cluster (files go with tmp_path)."""
    if url.startswith("postgresql://"):
        POSTGRES.get().drop_database(url)


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[StateStore]:
    """The store at `url`, open for the block."""
    store = await open_store(url)
    try:
        yield store
    finally:
        await store.close()

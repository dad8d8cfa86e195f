"""Every kind of store the suites run against; a new store joins by adding its URL here."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from ratchet.store import StateStore, open_store

STORE_URLS: dict[str, Callable[[Path], str]] = {
    "memory": lambda tmp_path: "memory://",
    "sqlite": lambda tmp_path: "sqlite:///" + str(tmp_path / "r.db"),
}


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[StateStore]:
    """The store at `url`, open for the block."""
    store = await open_store(url)
    try:
        yield store
    finally:
        await store.close()

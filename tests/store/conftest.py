"""The store behaviour suite: every test here runs once per store kind.

A new store joins the suite by adding its URL builder to `STORE_URLS`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from ratchet.model import Task
from ratchet.store import StateStore, open_store

from ..builders import make_task

STORE_URLS: dict[str, Callable[[Path], str]] = {
    "memory": lambda tmp_path: "memory://",
    "sqlite": lambda tmp_path: "sqlite:///" + str(tmp_path / "r.db"),
}


@pytest.fixture(params=sorted(STORE_URLS))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    opened = await open_store(STORE_URLS[request.param](tmp_path))
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def task(store: StateStore) -> Task:
    """A queued task, already in the store."""
    return await store.create_task(make_task("t1"))

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from ratchet.runtime import Runtime
from ratchet.store import StateStore, open_store

from .support import client_for


@pytest.fixture
async def api_store(url: str) -> AsyncIterator[StateStore]:
    """A store of each kind the API is tested on: SQLite and PostgreSQL."""
    store = await open_store(url)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def api(api_store: StateStore) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(api_store) as client:
        yield client


@pytest.fixture
def api_rt(api_store: StateStore) -> Runtime:
    return Runtime(api_store)

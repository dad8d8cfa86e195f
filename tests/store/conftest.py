"""The store behaviour suite: every test here runs once per store kind (the root
conftest's `store`).

A new store joins the suite by adding its URL builder to `tests.helpers.stores.STORE_URLS`.
"""

from __future__ import annotations

import pytest

from ratchet.records import Task
from ratchet.store import StateStore

from ..helpers.builders import make_task


@pytest.fixture
async def task(store: StateStore) -> Task:
    """A queued task, already in the store."""
    return await store.create_task(make_task("t1"))

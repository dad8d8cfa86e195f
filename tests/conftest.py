"""Fixtures every suite shares."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ratchet.store import StateStore

from .stores import STORE_URLS, opened


@pytest.fixture(params=sorted(STORE_URLS))
async def each_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """Every kind of store in turn, open, for tests that must hold on each."""
    async with opened(STORE_URLS[request.param](tmp_path)) as store:
        yield store

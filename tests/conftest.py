"""Fixtures every suite shares."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ratchet.store import StateStore

from .pg import Cluster
from .stores import POSTGRES, STORE_URLS, discard, opened


@pytest.fixture(scope="session", autouse=True)
def _stop_postgres_at_the_end() -> Iterator[None]:
    """Stop the session's PostgreSQL cluster, if a test started it."""
    yield
    POSTGRES.stop()


@pytest.fixture(params=sorted(STORE_URLS))
async def each_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """Every kind of store in turn, open, for tests that must hold on each."""
    url = STORE_URLS[request.param](tmp_path)
    try:
        async with opened(url) as store:
            yield store
    finally:
        discard(url)


@pytest.fixture
def postgres() -> Cluster:
    """The session's PostgreSQL cluster (started on first use)."""
    return POSTGRES.get()


@pytest.fixture
def postgres_url(postgres: Cluster) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database, dropped after the test."""
    with postgres.database() as url:
        yield url

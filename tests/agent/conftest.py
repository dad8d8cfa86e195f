"""Fixtures of the agent tests: a home for workspaces, a ledger, a store, scripts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..crash.flows import Ledger
from ..stores import STORE_URLS, opened
from .tools import CRASH_VARIABLE, LEDGER_VARIABLE


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RATCHET_HOME under the test's directory, so workspaces go there."""
    home = tmp_path / "home"
    monkeypatch.setenv("RATCHET_HOME", str(home))
    monkeypatch.delenv(CRASH_VARIABLE, raising=False)
    return home


@pytest.fixture(autouse=True)
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    """The outside world of `tests.agent.tools`, named by the environment (workers inherit it)."""
    book = Ledger(tmp_path / "ledger.db")
    book.create()
    monkeypatch.setenv(LEDGER_VARIABLE, book.path)
    return book


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return STORE_URLS["sqlite"](tmp_path)


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[StateStore]:
    async with opened(store_url) as store:
        yield store


@pytest.fixture
def rt(store: StateStore) -> Runtime:
    return Runtime(store)


@pytest.fixture
def script(tmp_path: Path) -> Callable[[dict[str, Any]], str]:
    """Write a scripted-model script; return the model string that names it."""

    def write(content: dict[str, Any]) -> str:
        path = tmp_path / f"script{len(list(tmp_path.glob('script*.json')))}.json"
        path.write_text(json.dumps(content), encoding="utf-8")
        return f"scripted:{path}"

    return write

"""The agent tests run on SQLite, with a home for workspaces and a ledger for their tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..helpers.agent_tools import CRASH_VARIABLE
from ..helpers.ledger import Ledger


@pytest.fixture
def store_kind() -> str:
    """A file store, as a deployment keeps its state (`each_store` still gives every kind)."""
    return "sqlite"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RATCHET_HOME under the test's directory, so workspaces go there."""
    home = tmp_path / "home"
    monkeypatch.setenv("RATCHET_HOME", str(home))
    monkeypatch.delenv(CRASH_VARIABLE, raising=False)
    return home


@pytest.fixture(autouse=True)
def _tools_act_on_a_ledger(tools_ledger: Ledger) -> None:
    """Every test's tools find their ledger, whether or not the test reads it."""

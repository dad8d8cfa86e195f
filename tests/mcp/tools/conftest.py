"""The MCP-tools tests: a home for workspaces, and the log of the test server."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RATCHET_HOME under the test's directory, so workspaces go there."""
    home = tmp_path / "home"
    monkeypatch.setenv("RATCHET_HOME", str(home))
    return home


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """Where the test server logs what happened (``start``, ``TOOL ARG``)."""
    return tmp_path / "server.log"

"""Fixtures for the CLI tests (the helpers shared with other suites are in tests/helpers/cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..helpers.cli import PopulatedStore, RunRatchet, populate_store, ratchet_runner


@pytest.fixture
def run_ratchet(tmp_path: Path) -> RunRatchet:
    """Run `ratchet ARGS...` in tmp_path and return the finished process."""
    return ratchet_runner(tmp_path)


@pytest.fixture
def populated_store(tmp_path: Path) -> PopulatedStore:
    """A SQLite store in tmp_path with four tasks, steps, events and a journal row."""
    return populate_store(tmp_path)

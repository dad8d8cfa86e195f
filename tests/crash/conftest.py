"""Fixtures of the crash tests: the scripted model's script and the uninterrupted reference run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Reference, reference_run, write_script


@pytest.fixture(scope="session")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_script(tmp_path_factory.mktemp("crash-script") / "script.json")


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, script: Path) -> Reference:
    """The workflow run once, start to end, by one worker nobody kills."""
    return reference_run(tmp_path_factory.mktemp("crash-reference"), script)

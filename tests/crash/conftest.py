"""Fixtures of the crash tests: the scripted model's script for `order_flow`, the uninterrupted
reference run, and the kind of store each run keeps its state in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import STORE_KINDS, Reference, Stores, reference_run, write_script


@pytest.fixture(scope="session")
def order_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_script(tmp_path_factory.mktemp("crash-script") / "script.json")


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, order_script: Path) -> Reference:
    """The workflow run once, start to end, by one worker nobody kills (on SQLite:
    recovered runs on every store must end as it did)."""
    with Stores("sqlite") as stores:
        return reference_run(tmp_path_factory.mktemp("crash-reference"), order_script, stores)


@pytest.fixture(params=STORE_KINDS)
def stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    """Fresh stores of each kind in turn (a test may narrow the kinds with indirect parametrization)."""
    with Stores(request.param) as stores:
        yield stores

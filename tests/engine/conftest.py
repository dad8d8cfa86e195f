"""Fixtures for the engine tests: a store of each kind, a Runtime over it, a ledger, scripts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet.runtime import Runtime
from ratchet.store import StateStore



@pytest.fixture
def store(each_store: StateStore) -> StateStore:
    return each_store


@pytest.fixture
def rt(store: StateStore) -> Runtime:
    return Runtime(store)


@pytest.fixture
def ledger(tmp_path: Path) -> str:
    return str(tmp_path / "ledger.jsonl")


@pytest.fixture
def script(tmp_path: Path) -> Callable[[dict[str, Any]], str]:
    """Write a scripted-model script; return the model string that names it."""

    def write(content: dict[str, Any]) -> str:
        path = tmp_path / f"script{len(list(tmp_path.glob('script*.json')))}.json"
        path.write_text(json.dumps(content))
        return f"scripted:{path}"

    return write

"""Where the demo keeps its files: one directory holding the store, the ledger and the model's script."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["LEDGER_NAME", "SCRIPT_NAME", "DemoPaths"]

SCRIPT_NAME = "deploy_script.json"
LEDGER_NAME = "ledger.db"


@dataclass(frozen=True)
class DemoPaths:
    """Where the demo keeps its files."""

    directory: Path
    store_url: str
    ledger: Path
    script: Path

    @classmethod
    def beside(cls, directory: Path, store_url: str) -> DemoPaths:
        """The demo's files in `directory`, with the store `store_url` (a SQLite file there)."""
        return cls(
            directory=directory,
            store_url=store_url,
            ledger=directory / LEDGER_NAME,
            script=directory / SCRIPT_NAME,
        )

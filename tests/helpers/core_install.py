"""A child Python that behaves as a core install (`pip install ratchet-runtime`, no extra).

Nothing is uninstalled: the child's ``sitecustomize`` refuses to import the
extras' libraries, as if they were missing (the test environment has them all).
"""

from __future__ import annotations

import os
from pathlib import Path

EXTRA_LIBRARIES = (
    "anthropic",
    "openai",
    "litellm",
    "psycopg",
    "psycopg_pool",
    "mcp",
    "opentelemetry",
    "prometheus_client",
    "fastapi",
    "uvicorn",
    "pydantic_ai",
    # LangGraph: the `langgraph` extra (ratchet.integrations.langgraph) and a peer of bench/peers.py.
    "langgraph",
    # The `bench` extra's other peer, which only bench/peers.py loads.
    "dbos",
)

BLOCKER = f"""
import sys

class _Missing:
    # Answers every import of the extras' libraries as a library that is not installed.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {EXTRA_LIBRARIES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
"""


def core_install_env(env: dict[str, str], directory: Path) -> dict[str, str]:
    """`env` for a child Python that finds none of the extras' libraries.

    The blocker is written in `directory`/blocker, put first on PYTHONPATH.
    """
    blocker = directory / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))}

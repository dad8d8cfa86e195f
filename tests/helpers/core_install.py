"""A child Python that behaves as a core install (`pip install ratchet-runtime`, no extra).

Nothing is uninstalled: the child's ``sitecustomize`` refuses to import any
library the core does not bring, as if it were missing (the test environment
has every extra). What the core brings is read from the installed package's
own metadata: its requirements without an extra, and theirs, down to the
end. So a library the code imports but pyproject does not declare in the
core (one that came along with an extra) fails here as on a user's machine.
"""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path

# The extras' libraries, which a core program must not import even where they are installed.
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

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _core_distributions() -> set[str]:
    """ratchet-runtime and every distribution its requirements without an extra bring, transitively."""
    found: set[str] = set()
    todo = ["ratchet-runtime"]
    while todo:
        name = _normal(todo.pop())
        if name in found:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python
        found.add(name)
        for requirement in requires:
            spec, _, marker = requirement.partition(";")
            if "extra" in marker:
                continue
            match = _NAME.match(spec.strip())
            if match is not None:
                todo.append(match.group(0))
    return found


def not_in_the_core() -> set[str]:
    """The top-level modules installed here that no distribution of the core brings."""
    core = _core_distributions()
    return {
        module
        for module, distributions in metadata.packages_distributions().items()
        if not any(_normal(distribution) in core for distribution in distributions)
    }


BLOCKER = """
import sys

MISSING = {missing!r}

class _Missing:
    # Answers every import of a library the core does not bring as a library that is not installed.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Missing())
"""


def core_install_env(env: dict[str, str], directory: Path) -> dict[str, str]:
    """`env` for a child Python that finds no installed library but those the core brings.

    The blocker is written in `directory`/blocker, put first on PYTHONPATH.
    """
    blocker = directory / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER.format(missing=sorted(not_in_the_core())))
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))}

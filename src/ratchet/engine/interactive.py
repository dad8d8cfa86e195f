"""Workflows defined in a notebook's cell or at a REPL: found only in the process that defined them.

A function defined in a Jupyter cell, at the ``python`` or ``python -m
asyncio`` prompt, or by ``python -c`` belongs to no file a worker could
import: its ``__main__`` has no ``__file__`` (a kernel, a REPL) or is not the
namespace the function was defined in (``python -m asyncio`` runs its prompt
in a namespace of its own, while ``__main__`` is asyncio's). Such a workflow
is named ``<interactive NOTEBOOK>:name`` (``<interactive>:name`` when the
notebook's name is unknown) and kept in a table of this process, which
holds the latest definition of each name: a cell run again replaces it.

The same process resumes its tasks from that table (after a kernel
interrupt, a later cell resumes or runs the task again); any other process
has no such code, and the task waits for it with one line naming the
notebook. A name is looked up only in the table, never loaded: a reference a
database writer made up runs nothing but what this process defined itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import WorkflowNotFound

__all__ = ["INTERACTIVE", "defined_interactively", "find_interactive", "interactive_source", "remember"]

INTERACTIVE = "<interactive"

# The notebook a kernel runs, as Jupyter (JPY_SESSION_NAME, since ipykernel 6.20) and VS Code tell it.
_NOTEBOOK_VARIABLES = ("__session__", "__vsc_ipynb_file__")

_DEFINED: dict[str, Any] = {}  # reference -> the workflow this process defined under it, latest


def defined_interactively(fn: Callable[..., Any]) -> bool:
    """Whether `fn` was defined in a notebook cell or at a REPL rather than in a file or module."""
    if fn.__module__ != "__main__":
        return False
    main = sys.modules.get("__main__")
    return main is None or not getattr(main, "__file__", None) or vars(main) is not fn.__globals__


def interactive_source(fn: Callable[..., Any]) -> str:
    """The source part of the reference of `fn`, defined interactively: ``<interactive NOTEBOOK>``."""
    notebook = next(filter(None, (fn.__globals__.get(name) for name in _NOTEBOOK_VARIABLES)), None)
    # The file's name only: Jupyter gives it relative to the server's root, not to the kernel's directory.
    return f"{INTERACTIVE} {Path(str(notebook)).name}>" if notebook else f"{INTERACTIVE}>"


def remember(reference: str, workflow: Any) -> None:
    """Keep `workflow` as what `reference` names in this process (the latest definition wins)."""
    _DEFINED[reference] = workflow


def find_interactive(reference: str) -> Any:
    """The workflow this process defined under `reference`, an interactive one.

    Raises:
        WorkflowNotFound: this process defined none: its code lives only in
            the notebook or session that made the task.
    """
    found = _DEFINED.get(reference)
    if found is not None:
        return found
    source, _, name = reference.rpartition(":")
    notebook = source.removeprefix(INTERACTIVE).strip(" >")
    where = f"the notebook {notebook}" if notebook else "an interactive session"
    raise WorkflowNotFound(
        f"workflow {name} was defined in {where} and lives only in the process that ran it: "
        "run it again there (the same task_id resumes it), or move it into a .py file of the project"
    )

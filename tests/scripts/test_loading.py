"""Loading a script for a task's code runs none of its program, and interactive code is never loaded.

In this process, with real files and a real SQLite store: a script without
its ``__main__`` guard that starts a task when imported (here no event loop
runs, so its ``asyncio.run(main())`` does start) is stopped at the task's
creation, and nothing is stored; a workflow defined outside any file is named
as interactive and found only in the process that defined it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ratchet.engine.workflow import Workflow, load_module, load_workflow
from ratchet.errors import StartsWhenLoaded, WorkflowNotFound
from ratchet.store import open_store

from .support import ORDER, RUN, UNGUARDED, ledger, main_runs


def test_a_script_that_starts_a_task_when_imported_is_refused_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    (tmp_path / "app.py").write_text(ORDER + RUN + UNGUARDED)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STORE", url)

    with pytest.raises(StartsWhenLoaded) as refused:
        load_module("app.py")

    assert refused.value.message == (
        "app.py starts tasks when it is imported, so it cannot be loaded for a task's code: put its "
        'entry point under `if __name__ == "__main__":` (docs/durability.md, "Scripts and notebooks")'
    )
    assert main_runs(tmp_path) == 1  # its main part began, and was stopped at the task
    assert ledger(tmp_path) == []
    assert not any(
        getattr(m, "__file__", None) == str(tmp_path / "app.py") for m in list(sys.modules.values())
    )

    async def tasks() -> list[str]:
        store = await open_store(url)
        try:
            return [task.id for task in await store.list_tasks()]
        finally:
            await store.close()

    assert asyncio.run(tasks()) == []


def test_a_workflow_defined_outside_any_file_is_interactive_and_found_only_here() -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}  # as `python -m asyncio` runs its prompt
    exec("import ratchet\n@ratchet.workflow\nasync def typed(ctx):\n    return 1\n", namespace)
    typed = namespace["typed"]
    assert isinstance(typed, Workflow)

    assert typed.reference == "<interactive>:typed"
    assert load_workflow("<interactive>:typed") is typed
    with pytest.raises(WorkflowNotFound) as missing:
        load_workflow("<interactive>:elsewhere")
    assert missing.value.message == (
        "workflow elsewhere was defined in an interactive session and lives only in the process that ran "
        "it: run it again there (the same task_id resumes it), or move it into a .py file of the project"
    )

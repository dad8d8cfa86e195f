"""A workflow typed at ``python -m asyncio``'s prompt runs to completion there.

The REPL reads the code from its standard input, as if typed: the workflow
and its tools (`ORDER`), then a top-level ``async with`` that runs its task.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .support import ORDER, PATIENCE, ledger, script_env

TYPED = """
async with ratchet.Runtime(os.environ["STORE"]) as rt:
    task = await rt.run(order, {"item": "book"}, task_id="repl-1")

print(task.id, task.status, task.workflow, task.result)
"""


def test_a_workflow_typed_at_the_asyncio_repl_runs_to_completion(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "go").touch()

    done = subprocess.run(
        [sys.executable, "-m", "asyncio"],
        input=ORDER + TYPED,
        cwd=project,
        env=script_env(f"sqlite:///{project / 'ratchet.db'}"),
        capture_output=True,
        text=True,
        timeout=PATIENCE * 2,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "repl-1 completed <interactive>:order ['charge book', 'ship book']" in done.stdout, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert ledger(project) == ["charge book", "ship book"]

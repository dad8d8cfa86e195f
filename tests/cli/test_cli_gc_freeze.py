"""`ratchet worker` and `ratchet run` freeze what start-up made out of the cyclic collector's passes.

What a process imports and builds before its first task (modules, the user's
workflows and tools, the store) lives as long as it does; once frozen
(``gc.freeze()``), no full collection walks it again (docs/workers.md, "The
cyclic garbage collector"). Each test runs the real program and reads,
from inside a task it ran, how many objects that process had frozen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ratchet.records import TaskStatus

from ..helpers.cli import RunRatchet
from .run_support import script
from .task_support import stored_task, with_runtime

FLOWS = """
import gc

import ratchet


@ratchet.workflow
async def frozen(ctx: ratchet.Context) -> int:
    return gc.get_freeze_count()
"""

TOOLS = """
import gc
from pathlib import Path

import ratchet


@ratchet.tool
def note_frozen() -> str:
    \"\"\"Write down how many objects this process has frozen.\"\"\"
    (Path(__file__).parent / "frozen.txt").write_text(str(gc.get_freeze_count()))
    return "noted"
"""


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def test_a_worker_runs_its_tasks_with_start_up_frozen(
    run_ratchet: RunRatchet, tmp_path: Path, url: str
) -> None:
    (tmp_path / "flows.py").write_text(FLOWS)
    task_id = with_runtime(url, lambda runtime: runtime.submit(f"{tmp_path / 'flows.py'}:frozen", {}))

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--workflows", "flows.py", "--store", url)

    assert done.returncode == 0, done.stderr
    task = stored_task(url, task_id)
    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, int) and task.result > 0


def test_run_runs_its_task_with_start_up_frozen(run_ratchet: RunRatchet, tmp_path: Path, url: str) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    call: dict[str, Any] = {"tool_calls": [{"name": "note_frozen", "arguments": {}}]}
    act = [call, {"content": "noted"}]
    model = script(tmp_path, act=act, steps=("note",))

    done = run_ratchet("run", "note it", "--model", model, "--tools", "tools.py", "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    assert int((tmp_path / "frozen.txt").read_text()) > 0

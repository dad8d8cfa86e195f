"""A RatchetAgent run killed with SIGKILL mid-run, on a SQLite file and on PostgreSQL, then resumed.

The run is a real child process (`pydai_app`), killed at a named crash point
after its first booking's effect; ``ratchet resume`` in another process
finishes it. Each booking must be in the ledger exactly once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet import TaskStatus, open_store
from ratchet.model import OpKind

from ..crash.harness import KILLED, REPO
from .pydai_app import ITEMS, LEDGER_ENV

TIMEOUT = 60


def _run(command: list[str], ledger: Path, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RATCHET_CRASH_AT", "RATCHET_STORE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env[LEDGER_ENV] = str(ledger)
    if crash_at is not None:
        env["RATCHET_CRASH_AT"] = crash_at
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=TIMEOUT)


async def _task(url: str, task_id: str) -> tuple[TaskStatus, list[tuple[OpKind, str]], object]:
    store = await open_store(url)
    try:
        task = await store.get_task(task_id)
        ops = await store.list_ops(task_id)
    finally:
        await store.close()
    return task.status, [(op.kind, op.name) for op in ops], task.result


@pytest.mark.parametrize(
    "crash_at",
    [
        # Model answers and tool results both pass these points: operations 0 to 4 are model,
        # book, model, book, model.
        "after_result_commit@2",  # the first booking happened and is journaled; the run goes no further
        "before_result_commit@4",  # the second booking happened, its result is not journaled: in doubt
    ],
)
def test_a_run_killed_mid_way_resumes_and_books_each_item_once(
    url: str, tmp_path: Path, crash_at: str
) -> None:
    ledger = tmp_path / "ledger.txt"
    task_id = "trip-1"
    killed = _run([sys.executable, "-m", "tests.integrations.pydai_app", url, task_id], ledger, crash_at)
    assert killed.returncode == KILLED, killed.stdout + killed.stderr
    assert ledger.exists()
    status, _, _ = asyncio.run(_task(url, task_id))
    assert status is TaskStatus.RUNNING

    resumed = _run([sys.executable, "-m", "ratchet", "resume", task_id, "--store", url], ledger)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    status, ops, result = asyncio.run(_task(url, task_id))
    assert status is TaskStatus.COMPLETED
    assert ops == [
        (OpKind.MODEL, "model:booker"),
        (OpKind.TOOL, "book"),
        (OpKind.MODEL, "model:booker"),
        (OpKind.TOOL, "book"),
        (OpKind.MODEL, "model:booker"),
    ]
    assert isinstance(result, dict) and result["output"] == "booked 2 items"
    lines = ledger.read_text().splitlines()
    assert [line.split()[0] for line in lines] == list(ITEMS)  # each booking once, in order
    assert [line.split()[1] for line in lines] == [f"{task_id}:1", f"{task_id}:3"]

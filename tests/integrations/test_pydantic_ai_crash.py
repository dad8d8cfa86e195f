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

from ratchet import TaskStatus, WaitReason, open_store
from ratchet.records import OpKind

from ..crash.harness import EXIT_WAITS_ON_PERSON, KILLED, REPO
from .pydai_app import ITEMS, LEDGER_ENV

TIMEOUT = 60


def _run(
    command: list[str],
    ledger: Path,
    crash_at: str | None = None,
    *,
    keyed: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    given = env
    env = {k: v for k, v in os.environ.items() if k not in ("RATCHET_CRASH_AT", "RATCHET_STORE")}
    env.update(given or {})
    env["PYDAI_KEYED"] = "1" if keyed else "0"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env[LEDGER_ENV] = str(ledger)
    if crash_at is not None:
        env["RATCHET_CRASH_AT"] = crash_at
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=TIMEOUT)


async def _task(url: str, task_id: str) -> tuple[TaskStatus | WaitReason, list[tuple[OpKind, str]], object]:
    store = await open_store(url)
    try:
        task = await store.get_task(task_id)
        ops = await store.list_ops(task_id)
    finally:
        await store.close()
    status = task.status if task.waiting_on is None else task.waiting_on
    return status, [(op.kind, op.name) for op in ops], task.result


JOURNAL = [
    (OpKind.MODEL, "model:booker"),
    (OpKind.TOOL, "book"),
    (OpKind.MODEL, "model:booker"),
    (OpKind.TOOL, "book"),
    (OpKind.MODEL, "model:booker"),
]


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
    assert ops == JOURNAL
    assert isinstance(result, dict) and result["output"] == "booked 2 items"
    lines = ledger.read_text().splitlines()
    assert [line.split()[0] for line in lines] == list(ITEMS)  # each booking once, in order
    assert [line.split()[1] for line in lines] == [f"{task_id}:1", f"{task_id}:3"]


def test_a_call_in_doubt_of_a_tool_without_a_key_waits_for_a_person(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    task_id = "trip-2"
    start = [sys.executable, "-m", "tests.integrations.pydai_app", url, task_id]
    killed = _run(start, ledger, "before_result_commit@4", keyed=False)
    assert killed.returncode == KILLED, killed.stdout + killed.stderr
    resume = [sys.executable, "-m", "ratchet", "resume", task_id, "--store", url]

    waits = _run(resume, ledger, keyed=False)

    assert waits.returncode == EXIT_WAITS_ON_PERSON, waits.stdout + waits.stderr
    status, _, _ = asyncio.run(_task(url, task_id))
    assert status is WaitReason.IN_DOUBT  # never a silent second booking
    settle = ["ratchet", "resolve", task_id, "--op", "3", "--result", '"booked hotel"', "--store", url]
    settled = _run([sys.executable, "-m", *settle], ledger, keyed=False)
    assert settled.returncode == 0, settled.stdout + settled.stderr
    finished = _run(resume, ledger, keyed=False)

    assert finished.returncode == 0, finished.stdout + finished.stderr
    status, ops, result = asyncio.run(_task(url, task_id))
    assert (status, ops) == (TaskStatus.COMPLETED, JOURNAL)
    assert isinstance(result, dict) and result["output"] == "booked 2 items"
    assert [line.split()[0] for line in ledger.read_text().splitlines()] == list(ITEMS)


def test_running_the_app_again_with_the_task_id_resumes_the_run_there(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    start = [sys.executable, "-m", "tests.integrations.pydai_app", url, "trip-3"]
    killed = _run(start, ledger, "after_result_commit@2")
    assert killed.returncode == KILLED, killed.stdout + killed.stderr

    again = _run(start, ledger)  # RatchetAgent.run(task_id=...) takes over the dead process's task

    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip() == "booked 2 items"  # the AgentRunResult of the resumed run
    status, ops, _ = asyncio.run(_task(url, "trip-3"))
    assert (status, ops) == (TaskStatus.COMPLETED, JOURNAL)
    assert [line.split()[0] for line in ledger.read_text().splitlines()] == list(ITEMS)
    replayed = _run(start, ledger)  # the completed run's result, from its journal
    assert (replayed.returncode, replayed.stdout.strip()) == (0, "booked 2 items")
    assert len(ledger.read_text().splitlines()) == len(ITEMS)

"""A RatchetAgent run given deps, killed mid-run, then resumed by ``ratchet resume`` in another process.

The deps (an open ledger file, `pydai_deps_app`) stayed in the killed
process: the resuming one makes its own with the agent's ``deps_factory``,
or, without one, leaves the task waiting for its code and says so in one line.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ratchet import TaskStatus, WaitReason

from ..crash.harness import KILLED
from .pydai_app import ITEMS
from .test_pydantic_ai_crash import _run, _task

APP = [sys.executable, "-m", "tests.integrations.pydai_deps_app"]


def _resume(task_id: str, url: str, ledger: Path, *, factory: bool) -> tuple[int, str]:
    command = [sys.executable, "-m", "ratchet", "resume", task_id, "--store", url]
    done = _run(command, ledger, env={"PYDAI_FACTORY": "1" if factory else "0"})
    return done.returncode, done.stdout + done.stderr


def test_a_run_resumed_elsewhere_books_with_the_deps_its_factory_makes(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    killed = _run([*APP, url, "deps-1"], ledger, "after_result_commit@2", env={"PYDAI_FACTORY": "1"})
    assert killed.returncode == KILLED, killed.stdout + killed.stderr

    code, said = _resume("deps-1", url, ledger, factory=True)

    assert code == 0, said
    status, _, result = asyncio.run(_task(url, "deps-1"))
    assert status is TaskStatus.COMPLETED
    assert isinstance(result, dict) and result["output"] == "booked 2 items"
    booked = [line.split() for line in ledger.read_text().splitlines()]
    assert booked == [[ITEMS[0], "starter"], [ITEMS[1], "factory"]]  # each deps where it was made


def test_without_a_factory_the_resume_waits_for_its_code_in_one_line(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    killed = _run([*APP, url, "deps-2"], ledger, "after_result_commit@2")
    assert killed.returncode == KILLED, killed.stdout + killed.stderr

    code, said = _resume("deps-2", url, ledger, factory=False)

    assert code == 2, said
    [line] = said.strip().splitlines()
    assert "was given deps by the process that started it" in line and "deps_factory=" in line
    status, _, _ = asyncio.run(_task(url, "deps-2"))
    assert status is WaitReason.CODE
    assert len(ledger.read_text().splitlines()) == 1  # nothing ran without its deps

    code, said = _resume("deps-2", url, ledger, factory=True)  # the factory deployed, resumed again

    assert code == 0, said
    assert [line.split()[1] for line in ledger.read_text().splitlines()] == ["starter", "factory"]

"""A workflow defined in the script that runs it: ``python app.py``, killed, run again, resumed elsewhere.

Real processes on real stores: the script is run by ``python``, killed with
SIGKILL while its task waits between two effects, and run again; or its task
is finished by ``ratchet resume`` or a ``ratchet worker`` started in the
project, which import the script without running its main part.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ratchet.records import TaskStatus, WaitReason
from ratchet.store import open_store

from ..helpers.cli import assert_one_line_error, ratchet_runner
from .support import RUN, SUBMIT, kill_while_waiting, ledger, main_runs, run_script, write_script

GUARD = 'if __name__ == "__main__":'

LIVE = """
import asyncio, os, ratchet

os.environ["APP_RUNS"] = os.environ.get("APP_RUNS", "") + "x"  # once each time this file runs
seen: list[str] = []


@ratchet.tool
def note(text: str) -> str:
    seen.append(text)
    return text


@ratchet.workflow(tools=[note])
async def noting(ctx: ratchet.Context) -> str:
    return await ctx.call_tool("note", {"text": "noted"})


async def main() -> None:
    async with ratchet.Runtime(os.environ["STORE"]) as rt:
        task = await rt.run(noting, {})
    print(task.status, seen, len(os.environ["APP_RUNS"]))


if __name__ == "__main__":
    asyncio.run(main())
"""


def _tasks(url: str) -> list[tuple[str, TaskStatus, WaitReason | None]]:
    async def read() -> list[tuple[str, TaskStatus, WaitReason | None]]:
        store = await open_store(url)
        try:
            return [(t.id, t.status, t.waiting_on) for t in await store.list_tasks()]
        finally:
            await store.close()

    return asyncio.run(read())


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "unguarded"])
def test_a_killed_script_run_again_finishes_its_task_with_each_effect_once(
    tmp_path: Path, url: str, guarded: bool
) -> None:
    project = tmp_path / "project"
    write_script(project, RUN, guarded=guarded)

    kill_while_waiting(project, url)
    assert ledger(project) == ["charge book"]
    (project / "go").touch()
    done = run_script(project, url)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "order-42 completed ['charge book', 'ship book']\n"
    assert ledger(project) == ["charge book", "ship book"]
    assert _tasks(url) == [("order-42", TaskStatus.COMPLETED, None)]
    # Run once more: the named task has ended, so it is returned, and nothing happens again.
    again = run_script(project, url)
    assert again.stdout == done.stdout
    assert ledger(project) == ["charge book", "ship book"]


def test_in_the_scripts_own_process_its_workflow_is_the_live_one_not_a_second_import(
    tmp_path: Path, url: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(LIVE)

    done = run_script(project, url)

    # A second import would have run the file again, and made a second `seen` for its tool to fill.
    assert done.stdout == "completed ['noted'] 1\n", done.stdout + done.stderr


def test_ratchet_resume_finishes_a_killed_scripts_task_without_running_its_main_part(
    tmp_path: Path, url: str
) -> None:
    project = tmp_path / "project"
    write_script(project, RUN, guarded=True)
    kill_while_waiting(project, url)
    (project / "go").touch()

    done = ratchet_runner(project)("resume", "order-42", "--store", url)

    assert done.returncode == 0, done.stdout + done.stderr
    assert ledger(project) == ["charge book", "ship book"]
    assert main_runs(project) == 1  # the killed run's; importing the script ran no more of it
    assert _tasks(url) == [("order-42", TaskStatus.COMPLETED, None)]


def test_a_worker_in_the_project_runs_a_task_its_script_submitted(tmp_path: Path, url: str) -> None:
    project = tmp_path / "project"
    write_script(project, SUBMIT, guarded=True)
    (project / "go").touch()
    submitted = run_script(project, url)
    assert submitted.stdout == "order-42\n", submitted.stderr

    done = ratchet_runner(project)("worker", "--until-idle", "--poll", "0.05", "--store", url)

    assert done.returncode == 0, done.stdout + done.stderr
    assert ledger(project) == ["charge book", "ship book"]
    assert main_runs(project) == 1
    assert _tasks(url) == [("order-42", TaskStatus.COMPLETED, None)]


def test_a_script_without_the_guard_is_not_run_again_for_its_task_which_waits_saying_why(
    tmp_path: Path, url: str
) -> None:
    project = tmp_path / "project"
    write_script(project, SUBMIT, guarded=False)
    (project / "go").touch()
    assert run_script(project, url).stdout == "order-42\n"
    run_ratchet = ratchet_runner(project)

    resumed = run_ratchet("resume", "order-42", "--store", url)
    worked = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)

    line = assert_one_line_error(
        resumed, "app.py runs an event loop (asyncio.run) when it is imported", GUARD
    )
    assert "order-42" in line
    assert worked.returncode == 0, worked.stdout + worked.stderr
    assert main_runs(project) == 1  # neither loaded the script's main part again
    assert ledger(project) == []
    assert _tasks(url) == [("order-42", TaskStatus.WAITING, WaitReason.CODE)]
    shown = run_ratchet("show", "order-42", "--store", url)
    assert GUARD in shown.stdout

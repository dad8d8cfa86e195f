"""A `ratchet run` killed with SIGKILL: a `ratchet worker` of the same host takes its task over at once.

The run's lease would keep every worker off the task for its 30 s; its
holder, a process of this host, is gone, so the worker takes the task over
without waiting, fencing the dead run out. A run that is still alive keeps
its task. Each test starts real programs; the tool of the task notes each
call (and the pid of the program that made it), then waits for a gate file.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.records import Lease, Task, TaskStatus

from ..helpers.cli import RunRatchet
from .run_support import acts, script
from .task_support import start_ratchet, stored_task, with_store

TOOLS = '''
import os
import time
from pathlib import Path

import ratchet

HERE = Path(__file__).parent
PATIENCE = 120.0  # seconds the tool waits for the gate before it passes anyway


@ratchet.tool(idempotent=True)
def pass_gate(entry: str) -> str:
    """Note the call and this process's pid, then wait for the gate file."""
    with (HERE / "calls.txt").open("a") as out:
        out.write(f"{entry} {os.getpid()}\\n")
    began = time.monotonic()
    while not (HERE / "gate").exists() and time.monotonic() - began < PATIENCE:
        time.sleep(0.01)
    return f"passed {entry}"
'''

WAIT = 60.0  # the bound of every wait: generous, for a loaded machine starting a program on PostgreSQL


@pytest.fixture
def here(tmp_path: Path) -> Iterator[Path]:
    """The test's directory, with the tools; the gate opens at the end whatever happened."""
    (tmp_path / "gate_tools.py").write_text(TOOLS)
    try:
        yield tmp_path
    finally:
        (tmp_path / "gate").touch()


def calls(directory: Path) -> list[str]:
    path = directory / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def start_run(directory: Path, url: str) -> subprocess.Popen[str]:
    """`ratchet run` of an agent whose one step calls the tool, which waits at the gate."""
    model = script(directory, steps=("a",), act=acts("mail", tool="pass_gate"))
    run = start_ratchet(
        directory, "run", "pass the gate", "-m", model, "--tools", "gate_tools.py", "--store", url
    )
    deadline = time.monotonic() + WAIT
    while not calls(directory):
        assert run.poll() is None, f"ratchet run ended ({run.returncode}) first: {run.communicate()}"
        assert time.monotonic() < deadline, f"the tool was not called within {WAIT} s"
        time.sleep(0.02)
    return run


def the_task(url: str) -> Task:
    [task] = with_store(url, lambda store: store.list_tasks())
    return task


def history(url: str, task_id: str) -> list[Lease]:
    return with_store(url, lambda store: store.lease_history(task_id))


def work_until_idle(run_ratchet: RunRatchet, url: str) -> subprocess.CompletedProcess[str]:
    """`ratchet worker` with the default lease time to live, until nothing is left for it."""
    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def test_a_worker_takes_over_at_once_the_task_of_a_killed_run(
    run_ratchet: RunRatchet, url: str, here: Path
) -> None:
    run = start_run(here, url)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=WAIT)
    task = the_task(url)
    [killed] = history(url, task.id)
    assert (killed.pid, killed.released, task.status) == (run.pid, False, TaskStatus.RUNNING)
    (here / "gate").touch()

    done = work_until_idle(run_ratchet, url)

    assert stored_task(url, task.id).status is TaskStatus.COMPLETED
    dead, taken = history(url, task.id)
    assert dead == killed.model_copy(update={"expires_at": dead.expires_at})  # renewed, never released
    assert taken.took_over and taken.token == dead.token + 1  # the killed run is fenced out
    assert taken.granted_at is not None and taken.granted_at < dead.expires_at  # its lease was not waited out
    assert f"its holder {dead.owner} (pid {run.pid} on {dead.host}) no longer runs" in done.stderr
    assert [call.split()[1] for call in calls(here)] == [str(run.pid), str(taken.pid)]


def test_a_worker_leaves_the_task_of_a_run_that_is_alive(
    run_ratchet: RunRatchet, url: str, here: Path
) -> None:
    run = start_run(here, url)
    task = the_task(url)
    [held] = history(url, task.id)

    done = work_until_idle(run_ratchet, url)

    assert "taking it over" not in done.stderr
    assert history(url, task.id) == [held]
    assert stored_task(url, task.id).status is TaskStatus.RUNNING
    (here / "gate").touch()
    out, err = run.communicate(timeout=WAIT)
    assert run.returncode == 0, (out, err)
    assert stored_task(url, task.id).status is TaskStatus.COMPLETED
    [claim] = history(url, task.id)
    assert (claim.token, claim.pid, claim.released) == (held.token, run.pid, True)
    assert calls(here) == [f"mail {run.pid}"]

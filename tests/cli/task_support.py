"""Helpers for the CLI tests that run tasks: make them with the Python API, look at them after.

Every task runs a workflow of ``flows.py``, named by that file's path, so the
`ratchet` subprocesses load the same code the test process does.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import ratchet
from ratchet.records import Lease, Operation, OpKind, Task, TaskStatus, utcnow
from ratchet.store import StateStore

from ..helpers.cli import ratchet_command, ratchet_env
from .run_support import read_terminal

T = TypeVar("T")

FLOWS = Path(__file__).with_name("flows.py")
SIGNAL_TIMEOUT = 15.0


def as_task(printed: dict[str, Any]) -> Task:
    """The task record a ``--json`` object stands for (it names the task's id ``task_id``)."""
    fields = dict(printed)
    return Task.model_validate({"id": fields.pop("task_id"), **fields})


def flow(name: str) -> str:
    """The reference of a workflow in flows.py."""
    return f"{FLOWS}:{name}"


def with_store(url: str, use: Callable[[StateStore], Awaitable[T]]) -> T:
    """Open the store, ``await use(store)``, close it; return what `use` returned."""

    async def run() -> T:
        async with ratchet.Runtime(url) as runtime:
            return await use(runtime.store)

    return asyncio.run(run())


def stored_task(url: str, task_id: str) -> Task:
    """The task as its store holds it now."""
    return with_store(url, lambda store: store.get_task(task_id))


def with_runtime(url: str, use: Callable[[ratchet.Runtime], Awaitable[T]]) -> T:
    async def run() -> T:
        async with ratchet.Runtime(url) as runtime:
            return await use(runtime)

    return asyncio.run(run())


def submit(url: str, workflow: str, **inputs: Any) -> str:
    """Queue a task for a workflow of flows.py; return its id."""
    return with_runtime(url, lambda runtime: runtime.submit(flow(workflow), inputs))


def run_here(url: str, workflow: str, **inputs: Any) -> Task:
    """Run a task of flows.py to its end in the test process."""
    return with_runtime(url, lambda runtime: runtime.run(flow(workflow), inputs))


def claim(url: str, task_id: str, owner: str, *, host: str, pid: int, pid_space: str = "") -> Lease:
    """Hold the task's lease for a minute, as a worker `owner` on `host` would."""

    async def take(store: StateStore) -> Lease:
        lease = await store.claim_lease(task_id, owner, 60, host=host, pid=pid, pid_space=pid_space)
        assert lease is not None
        return lease

    return with_store(url, take)


def gone_pid() -> int:
    """The pid of a process of this host that has ended (and was reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def leave_send_email_in_flight(url: str, to: str = "ops@example.com") -> str:
    """A `notify` task whose worker stopped inside send_email: the intent row, no result.

    As a worker killed right after committing the intent leaves it: the task
    running, operation 0 `started`, the lease given up.
    """

    async def crash(store: StateStore) -> str:
        task_id = await ratchet.Runtime(store).submit(flow("notify"), {"to": to})
        lease = await store.claim_lease(task_id, "crashed", 60, host="elsewhere", pid=1)
        assert lease is not None
        task = await store.get_task(task_id)
        await store.update_task(task.transition(TaskStatus.RUNNING, started_at=utcnow()), fence=lease)
        await store.record_op_started(
            Operation(
                task_id=task_id,
                seq=0,
                kind=OpKind.TOOL,
                name="send_email",
                idempotency_key=f"{task_id}:0",
                input={"to": to, "subject": "deployed"},
            ),
            fence=lease,
        )
        await store.release_lease(lease)
        return task_id

    return with_store(url, crash)


def start_ratchet(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start `ratchet ARGS...` in `cwd`, its output piped."""
    return subprocess.Popen(
        ratchet_command(*args),
        cwd=cwd,
        env=ratchet_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_file(path: Path, process: subprocess.Popen[str]) -> None:
    """Return once `path` exists; fail if the process ends or time runs out first."""
    deadline = time.monotonic() + SIGNAL_TIMEOUT
    while not path.exists():
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"ratchet ended ({process.returncode}) first: {out} {err}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"{path} did not appear within {SIGNAL_TIMEOUT} s")
        time.sleep(0.02)


def stop_with(process: subprocess.Popen[str], signum: signal.Signals) -> tuple[str, str]:
    """Send `signum` and return the process's output once it ended."""
    process.send_signal(signum)
    try:
        return process.communicate(timeout=SIGNAL_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def this_host() -> str:
    return socket.gethostname()


def answer_on_a_terminal(cwd: Path, answer: str, *args: str) -> tuple[int, str]:
    """Run `ratchet ARGS...` with a terminal as its standard input and output, typing `answer`."""
    leader, follower = os.openpty()
    process = subprocess.Popen(
        ratchet_command(*args),
        cwd=cwd,
        env=ratchet_env(),
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    os.write(leader, answer.encode() + b"\n")
    screen = read_terminal(leader)
    _, err = process.communicate(timeout=60)
    assert not err.strip(), err  # (the space after the prompt is written there, as `input` writes it)
    return process.returncode, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen).replace("\r\n", "\n")

"""A worker SIGKILLed while an MCP tool call is in flight; the resume follows the in-doubt rules.

The test server logs each call as it starts and then blocks, so the worker
is killed with the call surely sent. An ``external_action`` tool is never
run again by itself (``waiting(in_doubt)``, then a person's decision); a
``read_only`` one simply runs again. The server's log counts executions.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from ratchet import Agent, Runtime, TaskStatus, WaitReason
from ratchet.records import OpStatus

from ...crash.harness import EXIT_COMPLETED, EXIT_WAITS_ON_PERSON, KILLED, REPO, finish_worker, worker_command
from .support import log_lines, one_call_script, stdio_server

TASK_ID = "mcp-crash"


def start_worker(url: str, home: Path) -> subprocess.Popen[str]:
    """A real ``ratchet resume`` process on the task."""
    env = {k: v for k, v in os.environ.items() if k != "RATCHET_CRASH_AT"}
    env["RATCHET_HOME"] = str(home)
    return subprocess.Popen(
        worker_command(url, TASK_ID),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_once_called(worker: subprocess.Popen[str], log: Path, line: str) -> None:
    """SIGKILL the worker as soon as the server logged `line` (the call started), and its server.

    The machine dies, not the worker alone: a server left behind would hold
    the worker's output open, and would answer a call no one waits for.
    """
    deadline = time.monotonic() + 30
    while line not in log_lines(log):
        assert worker.poll() is None, worker.communicate()
        assert time.monotonic() < deadline, f"the server never logged {line!r}"
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    for pid in log.with_suffix(".pids").read_text(encoding="utf-8").split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    assert finish_worker(worker) == KILLED


def submit(url: str, agent: Agent) -> None:
    async def go() -> None:
        async with Runtime(url) as rt:
            await rt.submit(agent, instruction="Settle order o1.", task_id=TASK_ID)

    asyncio.run(go())


def settle(url: str, decide: str) -> tuple[TaskStatus, WaitReason | None, list[OpStatus]]:
    """The task as it stands, after `decide` (``approve``, ``resolve``, or nothing)."""

    async def go() -> tuple[TaskStatus, WaitReason | None, list[OpStatus]]:
        async with Runtime(url) as rt:
            if decide == "approve":
                await rt.approve(TASK_ID)
            elif decide == "resolve":
                [op] = [op for op in await rt.store.list_ops(TASK_ID) if op.name == "charge"]
                await rt.resolve(TASK_ID, op.seq, result="charged o1")
            task = await rt.store.get_task(TASK_ID)
            ops = [op.status for op in await rt.store.list_ops(TASK_ID) if op.name in ("charge", "audit")]
            return task.status, task.waiting_on, ops

    return asyncio.run(go())


def test_an_external_action_caught_in_flight_waits_for_a_person_and_never_runs_twice(
    url: str, tmp_path: Path, home: Path, server_log: Path
) -> None:
    submit(
        url,
        Agent(
            "shop",
            model=one_call_script(tmp_path / "s.json", "charge", {"order": "o1"}),
            mcp=[stdio_server(server_log)],
        ),
    )
    assert finish_worker(start_worker(url, home)) == EXIT_WAITS_ON_PERSON  # for approval
    settle(url, "approve")
    kill_once_called(start_worker(url, home), server_log, "charge o1")
    assert settle(url, "") == (TaskStatus.RUNNING, None, [OpStatus.STARTED])
    assert finish_worker(start_worker(url, home)) == EXIT_WAITS_ON_PERSON
    assert settle(url, "")[:2] == (TaskStatus.WAITING, WaitReason.IN_DOUBT)
    settle(url, "resolve")  # a person looked: it happened
    assert finish_worker(start_worker(url, home)) == EXIT_COMPLETED
    assert settle(url, "") == (TaskStatus.COMPLETED, None, [OpStatus.SUCCEEDED])
    assert log_lines(server_log).count("charge o1") == 1
    # Settling the call in doubt, and the replay after the decision, needed no server.
    assert log_lines(server_log).count("start") == 2


def test_a_read_only_tool_caught_in_flight_runs_again(
    url: str, tmp_path: Path, home: Path, server_log: Path
) -> None:
    submit(
        url,
        Agent(
            "shop",
            model=one_call_script(tmp_path / "s.json", "audit", {"order": "o1"}),
            mcp=[stdio_server(server_log)],
        ),
    )
    kill_once_called(start_worker(url, home), server_log, "audit o1")
    assert finish_worker(start_worker(url, home)) == EXIT_COMPLETED
    assert settle(url, "") == (TaskStatus.COMPLETED, None, [OpStatus.SUCCEEDED])
    assert log_lines(server_log).count("audit o1") == 2  # read_only: running it again is the rule

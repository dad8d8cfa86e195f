"""A RatchetAgent.run_stream killed with SIGKILL mid-stream, on a SQLite file and on PostgreSQL, then resumed.

The run is a real child process (`pydai_stream_app`) whose model stops after
its second piece; the test waits until those pieces are in the task's
stream, kills the process, and resumes the run in another: the run completes
with the whole answer, and the task's stream shows the cut attempt apart from
the one that answered (docs/streaming.md, "Marks").
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

from ratchet import TaskStatus, open_store
from ratchet.records import OpKind, StreamEntry, StreamKind

from ..crash.harness import KILLED, REPO
from .pydai_stream_app import STALL_ENV
from .pydai_support import PIECES

TIMEOUT = 60
APP = [sys.executable, "-m", "tests.integrations.pydai_stream_app"]


def _env(stall: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RATCHET_CRASH_AT", "RATCHET_STORE", STALL_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if stall is not None:
        env[STALL_ENV] = str(stall)
    return env


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


async def _stream(url: str, task_id: str) -> list[StreamEntry]:
    store = await open_store(url)
    try:
        return await store.read_stream(task_id, from_offset=0, limit=1000)
    finally:
        await store.close()


async def _task(url: str, task_id: str) -> tuple[TaskStatus, Any, list[OpKind]]:
    store = await open_store(url)
    try:
        task = await store.get_task(task_id)
        ops = await store.list_ops(task_id)
    finally:
        await store.close()
    return task.status, task.result, [op.kind for op in ops]


def _killed_mid_stream(url: str, task_id: str) -> str:
    """Start the app stalling after two pieces, wait until they are in the task's stream, SIGKILL it."""
    child = subprocess.Popen(
        [*APP, url, task_id],
        cwd=REPO,
        env=_env(stall=2),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        give_up = time.monotonic() + TIMEOUT  # a guard against a hang, not a speed target
        while sum(e.kind is StreamKind.TEXT for e in asyncio.run(_stream(url, task_id))) < 2:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < give_up, "the first pieces never reached the task's stream"
            time.sleep(0.05)
    finally:
        child.kill()
        out, err = child.communicate(timeout=TIMEOUT)
    assert child.returncode == KILLED, out + err
    return out


def _attempts(entries: list[StreamEntry]) -> list[tuple[dict[str, Any], str, dict[str, Any] | None]]:
    """The stream's attempts of its one model call: (attempt mark, text written, end mark or None)."""
    found: list[tuple[dict[str, Any], str, dict[str, Any] | None]] = []
    for entry in entries:
        assert entry.seq == 0  # the run's one model call
        value = entry.value if isinstance(entry.value, dict) else {}
        if entry.kind is StreamKind.ATTEMPT:
            found.append((value, "", None))
        elif entry.kind is StreamKind.TEXT:
            mark, text, end = found[-1]
            found[-1] = (mark, text + str(entry.value), end)
        elif entry.kind is StreamKind.END:
            cut = next(i for i in range(len(found) - 1, -1, -1) if found[i][2] is None)  # the open one
            found[cut] = (found[cut][0], found[cut][1], value)
    return found


def _the_cut_attempt_is_apart(entries: list[StreamEntry]) -> None:
    (first, cut_text, cut_end), (second, text, end) = _attempts(entries)
    assert cut_text == "".join(PIECES[:2])  # what the killed process wrote, kept
    assert cut_end is not None and cut_end["outcome"] == "interrupted"
    assert second.get("restarted") is True and second.get("cut_at") == cut_end.get("cut_at")
    assert text == "".join(PIECES)  # the retry's whole answer, after the mark
    assert end == {"outcome": "succeeded"}
    assert first == {}


def test_a_run_killed_mid_stream_is_resumed_by_a_worker(url: str) -> None:
    out = _killed_mid_stream(url, "story-1")
    assert out.splitlines() == [f"piece {p!r}" for p in PIECES[:2]]  # its reader had those two

    resumed = _run([sys.executable, "-m", "ratchet", "resume", "story-1", "--store", url])

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    status, result, ops = asyncio.run(_task(url, "story-1"))
    assert (status, ops) == (TaskStatus.COMPLETED, [OpKind.MODEL])
    assert isinstance(result, dict) and result["output"] == "".join(PIECES)
    _the_cut_attempt_is_apart(asyncio.run(_stream(url, "story-1")))


def test_running_the_app_again_streams_the_resumed_run_then_replays_it(url: str) -> None:
    _killed_mid_stream(url, "story-2")

    again = _run([*APP, url, "story-2"])  # RatchetAgent.run_stream(task_id=...) takes the run over here

    assert again.returncode == 0, again.stdout + again.stderr
    pieces = [f"piece {p!r}" for p in PIECES]
    assert again.stdout.splitlines() == [*pieces, f"output {''.join(PIECES)!r}"]  # live, piece by piece
    entries = asyncio.run(_stream(url, "story-2"))
    _the_cut_attempt_is_apart(entries)
    replayed = _run([*APP, url, "story-2"])  # completed: its journal replayed, the model not called
    whole = f"piece {''.join(PIECES)!r}"
    assert (replayed.returncode, replayed.stdout.splitlines()) == (0, [whole, f"output {''.join(PIECES)!r}"])
    assert asyncio.run(_stream(url, "story-2")) == entries  # and nothing written to the stream again

"""Running the real `ratchet` program as a subprocess, for every suite that does.

Also a SQLite store filled through the Python store API (`populate_store`),
which the CLI tests look at.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ratchet.config.schema import ENVIRONMENT
from ratchet.records import (
    Approval,
    Event,
    Severity,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    WaitReason,
)
from ratchet.store import open_store

RunRatchet = Callable[..., subprocess.CompletedProcess[str]]

T0 = dt.datetime(2025, 1, 2, 9, 0, tzinfo=dt.UTC)


def ratchet_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ratchet", *args]


# What would choose a setting for the program (ratchet.toml's variables, and the file itself).
SETTING_VARIABLES = frozenset({*ENVIRONMENT.values(), "RATCHET_CONFIG"})


def ratchet_env(**extra: str) -> dict[str, str]:
    """The environment the program runs in: no store, model, log or worker setting, nor config file,
    chosen unless a test says so."""
    env = {key: value for key, value in os.environ.items() if key not in SETTING_VARIABLES}
    env.update({"COLUMNS": "200", "NO_COLOR": "1", **extra})
    return env


def as_from_a_terminal() -> None:
    """A `preexec_fn` for a Python program a test stops with SIGINT, as Ctrl-C in a terminal would.

    A shell that runs the suite in the background (``pytest &`` in a script) starts it with SIGINT
    ignored, and every program the suite starts inherits that: Python then never raises
    KeyboardInterrupt. `ratchet` sets its own handlers; a plain program relies on Python's.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assert_one_line_error(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Check the shape every bad-input failure has; return the error line."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    [line] = lines
    assert line.startswith("error: ")
    for text in expected:
        assert text in line
    return line


def table_cells(line: str) -> list[str]:
    """The cells of one line of a table the CLI printed (`ratchet.cli.tables`: columns two spaces apart)."""
    return re.split(r" {2,}", line.strip())


def ratchet_runner(cwd: Path) -> RunRatchet:
    """Return a function that runs `ratchet ARGS...` in `cwd` and returns the finished process."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ratchet_command(*args),
            cwd=cwd,
            env=env or ratchet_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run


@dataclass(frozen=True)
class Tasks:
    """The tasks `populated_store` holds, by role."""

    queued: Task
    running: Task
    waiting: Task
    completed: Task

    @property
    def all(self) -> list[Task]:
        return [self.queued, self.running, self.waiting, self.completed]


@dataclass(frozen=True)
class PopulatedStore:
    url: str
    path: Path
    tasks: Tasks


def _task(task_id: str, name: str, minutes: int, **fields: Any) -> Task:
    moment = T0 + dt.timedelta(minutes=minutes)
    return Task(
        id=task_id,
        name=name,
        instruction=f"instruction of {name}",
        agent="ops-agent",
        created_at=moment,
        updated_at=moment,
        **fields,
    )


async def _populate(url: str) -> Tasks:
    tasks = Tasks(
        queued=_task("t-queued", "queued task", 0),
        running=_task("t-running", "deploy service", 1, status=TaskStatus.RUNNING, goal="service deployed"),
        waiting=_task(
            "t-waiting", "send email", 2, status=TaskStatus.WAITING, waiting_on=WaitReason.APPROVAL
        ),
        completed=_task("t-done", "check status", 3, status=TaskStatus.COMPLETED, result={"healthy": True}),
    )
    store = await open_store(url)
    try:
        for task in tasks.all:
            await store.create_task(task)
        await store.replace_steps(
            tasks.running.id,
            [
                Step(
                    task_id=tasks.running.id,
                    index=0,
                    name="build image",
                    status=StepStatus.COMPLETED,
                    attempts=1,
                ),
                Step(
                    task_id=tasks.running.id, index=1, name="roll out", status=StepStatus.CURRENT, attempts=1
                ),
                Step(task_id=tasks.running.id, index=2, name="smoke test"),
            ],
        )
        for number in range(1, 16):
            await store.append_event(
                Event(
                    task_id=tasks.running.id,
                    time=T0 + dt.timedelta(seconds=number),
                    kind="progress",
                    severity=Severity.WARNING if number == 15 else Severity.INFO,
                    message=f"raw message {number}",
                    display_message=f"progress {number}" if number % 2 else None,
                )
            )
        await store.request_approval(
            Approval(
                task_id=tasks.waiting.id,
                seq=0,
                tool="send_email",
                arguments={"to": "ops@example.com"},
                why="send_email is an external_action tool",
            )
        )
        await store.append_event(
            Event(task_id=tasks.waiting.id, kind="approval", message="send_email needs approval")
        )
    finally:
        await store.close()
    return tasks


def populate_store(tmp_path: Path) -> PopulatedStore:
    """Make a SQLite store in tmp_path with four tasks, steps, events and a journal row."""
    path = tmp_path / "state" / "ratchet.db"
    path.parent.mkdir()
    url = f"sqlite:///{path}"
    tasks = asyncio.run(_populate(url))
    return PopulatedStore(url=url, path=path, tasks=tasks)


class LineReader:
    """Reads a process's output on a thread, so a test can wait for a line with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float) -> None:
        """Return once a line containing `text` was printed.

        Raises:
            AssertionError: the output ended, or `timeout` seconds passed, first.
        """
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            remaining = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                raise AssertionError(f"{text!r} not printed within {timeout} s: {self.lines}") from None
            if line is None:
                raise AssertionError(f"output ended without {text!r}: {self.lines}")
            self.lines.append(line)

    def rest(self, timeout: float) -> list[str]:
        """Return every line, once the output has ended."""
        self._thread.join(timeout)
        while not self._queue.empty():
            line = self._queue.get()
            if line is not None:
                self.lines.append(line)
        return self.lines

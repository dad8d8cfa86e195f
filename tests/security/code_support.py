"""A project the hostile code tests attack: real `ratchet` programs run in it, on a store of its own.

`Project` runs and starts ``ratchet`` in its root (the programs' project root),
with RATCHET_HOME as the test sets it; `scripted` writes a scripted model; the
store is read back through the store API, and written behind its back with
SQL (tests/helpers/raw_sql.py), as a database writer would.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ratchet.records import Event, Task

from ..cli.task_support import with_store
from ..helpers.cli import ratchet_command, ratchet_env
from ..helpers.scripts import plan, say, verdict

WAIT = 60.0  # seconds a program may take to do what a test waits for
STOP = 30.0  # seconds a worker may take to stop after SIGTERM


@dataclass(frozen=True)
class Project:
    """A project root, the store its programs use, and their environment."""

    root: Path
    url: str
    env: dict[str, str]

    def ratchet(self, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        """Run ``ratchet ARGS... --store URL`` here to its end."""
        return subprocess.run(
            ratchet_command(*args, "--store", self.url),
            cwd=self.root,
            env={**self.env, **extra_env},
            capture_output=True,
            text=True,
            timeout=WAIT,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        """Start ``ratchet ARGS... --store URL`` here; its output goes to files, never blocking it."""
        logs = self.root.parent / "logs"
        logs.mkdir(exist_ok=True)
        with (logs / f"{args[0]}.out").open("w") as out, (logs / f"{args[0]}.err").open("w") as err:
            return subprocess.Popen(
                ratchet_command(*args, "--store", self.url),
                cwd=self.root,
                env=self.env,
                stdout=out,
                stderr=err,
                text=True,
            )

    def submit(self, *args: str, **extra_env: str) -> str:
        """Queue an agent task with ``ratchet submit ARGS...``; return its id."""
        done = self.ratchet("submit", "do the work", *args, **extra_env)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def task(self, task_id: str) -> Task:
        return with_store(self.url, lambda store: store.get_task(task_id))

    def events(self, task_id: str) -> list[Event]:
        return with_store(self.url, lambda store: store.list_events(task_id))

    def task_ids(self) -> list[str]:
        """The ids of every task in the store, sorted."""
        return sorted(t.id for t in with_store(self.url, lambda store: store.list_tasks()))


def scripted(directory: Path, *act: dict[str, Any], steps: tuple[str, ...] = ("work",)) -> str:
    """A scripted model (kept outside the project) planning `steps` and answering `act`; its --model value."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"script-{len(list(directory.glob('script-*.json')))}.json"
    answers = {"plan": [plan(*steps)], "act": [*act, say("done")], "verify": [verdict(True) for _ in steps]}
    path.write_text(json.dumps(answers))
    return f"scripted:{path}"


def wait_until(condition: Callable[[], bool], process: subprocess.Popen[str] | None = None) -> None:
    """Wait for `condition`, failing if `process` ends first or it takes longer than `WAIT`."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if process is not None:
            assert process.poll() is None, f"the program ended ({process.returncode}) while the test waited"
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.1)


@contextlib.contextmanager
def running(process: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """`process` for the block; stopped with SIGTERM afterwards (killed if it does not stop)."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def stop_worker(worker: subprocess.Popen[str]) -> int:
    """Stop a worker that must still be alive, as an operator does (SIGTERM); return its exit code."""
    assert worker.poll() is None, f"the worker died ({worker.returncode})"
    worker.send_signal(signal.SIGTERM)
    return worker.wait(STOP)


def answers(url: str) -> bool:
    """Whether a GET of `url` answers 200 (a server that has started)."""
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def project_env(home: Path | None) -> dict[str, str]:
    """The programs' environment: RATCHET_HOME set to `home`, or unset (its default, the per-user
    state directory, which tests/conftest.py puts under the test's directory)."""
    env = {key: value for key, value in ratchet_env().items() if key != "RATCHET_HOME"}
    if home is not None:
        env["RATCHET_HOME"] = str(home)
    return env


SEAL_BROKEN = "do not match their seal"


def sealed_again(record: dict[str, object]) -> None:
    """Seal a task record as it now stands, with the key every process of the tests holds.

    A writer of the database alone breaks a task's seal (`SEAL_BROKEN`); one who
    also holds the signing key, or a process tricked into sealing the row, meets
    the walls behind it: code trust, the workspaces, the entry points.
    """
    from ratchet.records import Task
    from ratchet.trust.seal import SigningKey

    from ..helpers.builders import CODE_INPUTS

    sealed = SigningKey.from_environment().seal(Task.model_validate(record), CODE_INPUTS)
    record["seal"] = sealed.seal

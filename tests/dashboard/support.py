"""What the browser tests drive: a real `ratchet serve` and `ratchet worker`, a scripted task, screenshots.

The task is the one the `ratchet run` tests run (their tools file, which keeps a
ledger of every effect once per idempotency key and logs every call), with one
more tool, `publish`, of risk `external_action`: its calls wait for a person's
approval, which the tests give by the dashboard's button.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..cli.run_support import TOOLS, acts, script
from ..helpers.cli import LineReader, ratchet_command, ratchet_env, ratchet_runner

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
INSTALL_HINT = "the browser tests need Chromium (no chromium on PATH): run scripts/install-system-packages"
ARTIFACTS_ENV = "RATCHET_TEST_ARTIFACTS"
REPO = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

PUBLISH = '''

@ratchet.tool(risk="external_action")
def publish(entry: str, ctx: ratchet.ToolContext) -> str:
    """Publish an entry to the world (a person approves each call first)."""
    _effect("publish", ctx.idempotency_key, entry)
    return f"published {entry}"


@ratchet.tool
async def sync(entry: str) -> str:
    """Copy an entry elsewhere; it holds while the file `hold` exists. No ToolContext: never rerun unasked."""
    with (HERE / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"tool": "sync", "key": None, "entry": entry}) + "\\n")
    while (HERE / "hold").exists():
        await asyncio.sleep(0.05)
    return f"synced {entry}"
'''


def chromium_path() -> str | None:
    """The system Chromium the tests drive, if installed (Playwright downloads none)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def artifacts_dir() -> Path:
    """Where screenshots go: $RATCHET_TEST_ARTIFACTS, else test-artifacts/ in the checkout (gitignored)."""
    return Path(os.environ.get(ARTIFACTS_ENV) or REPO / "test-artifacts")


def assert_png(path: Path) -> None:
    assert path.is_file(), f"no screenshot at {path}"
    assert path.read_bytes()[:8] == PNG_SIGNATURE, f"{path} is not a PNG"


def write_agent(directory: Path, *, delay: float = 0.0, last: list[dict[str, Any]] | None = None) -> str:
    """Write the tools file and the model's script; return the `--model` value.

    The plan has three steps: record `a`, record `b` (each report `delay`
    seconds after its call, so a watcher sees the task advance), then `last`:
    by default publish `c`, which waits for approval.
    """
    (directory / "tools.py").write_text(TOOLS + PUBLISH)
    final = acts("c", tool="publish") if last is None else last
    act = [*acts("a", delay=delay), *acts("b", delay=delay), *final]
    return script(directory, act=act, steps=("a", "b", "c"))


def asks(question: str) -> list[dict[str, Any]]:
    """A last step that asks a person `question` (the built-in ask_user), then reports."""
    return [{"tool_calls": [{"name": "ask_user", "arguments": {"question": question}}]}, {"content": "asked"}]


def calls(directory: Path, tool: str) -> list[str]:
    """The entries of every call of `tool`, repeats included."""
    path = directory / "calls.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [found["entry"] for found in map(json.loads, lines) if found["tool"] == tool]


def run_detached(directory: Path, store: str, model: str, *options: str) -> str:
    """`ratchet run ... --detach` (and `options`): queue the agent's task; return its id."""
    done = ratchet_runner(directory)(
        "run", "keep the ledger", "-m", model, "--tools", "tools.py", "--detach", "--store", store, *options
    )
    assert done.returncode == 0, done.stderr
    [task_id] = done.stdout.split()
    return task_id


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL if it does not end in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)


@dataclass
class Server:
    """A running `ratchet serve`: its base URL, store, and the token a client sends (if any)."""

    base: str
    store: str
    directory: Path
    token: str | None = None

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.request(method, self.base + path, headers=headers, timeout=10, **kwargs)

    def task(self, task_id: str) -> dict[str, Any]:
        answer = self.api("GET", f"/api/tasks/{task_id}")
        assert answer.status_code == 200, answer.text
        shown: dict[str, Any] = answer.json()
        return shown

    def wait_for_status(self, task_id: str, status: str, timeout: float = 20.0) -> dict[str, Any]:
        """Poll the API until the task has `status`; return it."""
        deadline = time.monotonic() + timeout
        while (shown := self.task(task_id))["task"]["status"] != status:
            assert time.monotonic() < deadline, f"task {task_id} is not {status} after {timeout} s: {shown}"
            time.sleep(0.1)
        return shown


@contextlib.contextmanager
def serving(directory: Path, store: str, *, token: str | None = None, port: int = 0) -> Iterator[Server]:
    """Run `ratchet serve --port 0` in `directory` (with a token file holding `token`, if given).

    The port is the one the server reports it bound, so no other process can take it in between;
    `port` names one instead (a server started again where a page's connections went).
    """
    args = ["serve", "--store", store, "--port", str(port)]
    if token is not None:
        (directory / "tokens").write_text(f"# the dashboard tests' token\n{token}\n")
        args += ["--token-file", "tokens"]
    process = subprocess.Popen(
        ratchet_command(*args),
        cwd=directory,
        env=ratchet_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        output = LineReader(process.stdout)
        output.wait_for("ratchet serve: the dashboard at", START_TIMEOUT)
        [base] = [m[1] for line in output.lines if (m := re.search(r"dashboard at (http://\S+?)/,", line))]
        server = Server(base, store, directory, token)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if server.api("GET", "/api/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, output.lines
            time.sleep(0.05)
        yield server
    finally:
        stop(process)


@contextlib.contextmanager
def working(directory: Path, store: str, *options: str) -> Iterator[subprocess.Popen[str]]:
    """Run `ratchet worker` in `directory` (it loads tools.py from there); its log goes to worker.log."""
    with (directory / "worker.log").open("w") as log:
        process = subprocess.Popen(
            ratchet_command("worker", "--store", store, "--poll", "0.1", "--grace", "1", *options),
            cwd=directory,
            env=ratchet_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            yield process
        finally:
            stop(process)

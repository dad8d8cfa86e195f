"""`ratchet mcp` as the tests meet it: a subprocess, reached by the SDK's real client.

`connect` starts ``ratchet mcp`` (or the test server of whoami_server.py) over
stdio or streamable HTTP and yields a connected `mcp.Client`; `agent_task`
queues a scripted agent's task that a worker subprocess
(tests/crash/harness.py) then runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from ratchet import Agent, Runtime

from ...crash.harness import REPO

AGENT = "ops"
STARTUP = 20.0  # seconds a server subprocess may take to listen
UPDATE_WAIT = 15.0  # seconds a subscriber may wait for the next update


def environment() -> dict[str, str]:
    """The subprocesses' environment: this one, with the checkout importable (tests' code)."""
    env = {key: value for key, value in os.environ.items() if key != "RATCHET_STORE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def mcp_command(store_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "ratchet", "mcp", "--store", store_url, *args]


def whoami_command(store_url: str, *args: str) -> list[str]:
    """The test server: `ratchet mcp`'s server plus a tool that says who the caller is."""
    return [sys.executable, "-m", "tests.mcp.server.whoami_server", store_url, *args]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[str], errors: IO[str]) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if process.poll() is not None:
            errors.seek(0)
            raise AssertionError(f"the server exited {process.returncode}: {errors.read()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise AssertionError(f"the server did not listen on port {port} within {STARTUP:g} s")


@contextlib.contextmanager
def http_server(command: list[str]) -> Iterator[str]:
    """Start `command` (an HTTP server, given ``--port`` here); yield its MCP endpoint's URL."""
    port = free_port()
    with tempfile.TemporaryFile("w+") as errors:  # a file, not a pipe: a chatty server never blocks on it
        process = subprocess.Popen(
            [*command, "--transport", "http", "--port", str(port)],
            cwd=REPO,
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            text=True,
        )
        try:
            wait_listening(port, process, errors)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def with_token(endpoint: str, token: str | None) -> Any:
    """The streamable-HTTP transport to `endpoint`, sending `token` as a bearer token if given."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return streamable_http_client(endpoint, http_client=httpx2.AsyncClient(headers=headers, timeout=30))


@contextlib.asynccontextmanager
async def connect(
    transport: str, command: list[str], *, token: str | None = None, **client: Any
) -> AsyncIterator[Client]:
    """A real `mcp.Client` connected to `command` over `transport` (``stdio`` or ``http``)."""
    if transport == "stdio":
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment(), cwd=REPO)
        async with Client(params, read_timeout_seconds=UPDATE_WAIT, **client) as connected:
            yield connected
        return
    with http_server(command) as endpoint:
        async with Client(
            with_token(endpoint, token), read_timeout_seconds=UPDATE_WAIT, **client
        ) as connected:
            yield connected


def write_script(path: Path, *, delay: float) -> str:
    """A two-step plan, each step's act answer `delay` seconds late; return the model string."""
    steps = [
        {"step_name": name, "description": name, "action_instruction": name, "validation_instruction": ""}
        for name in ("look", "fix")
    ]
    script = {
        "plan": [{"content": {"goal": "fix service X", "steps": steps}}],
        "act": [{"content": "looked", "delay": delay}, {"content": "fixed", "delay": delay}],
    }
    path.write_text(json.dumps(script), encoding="utf-8")
    return f"scripted:{path}"


async def agent_task(store_url: str, model: str, *, task_id: str) -> str:
    """Queue agent `AGENT`'s task (no tools, the scripted `model`) for a worker; return its id."""
    async with Runtime(store_url) as runtime:
        return await runtime.submit(
            Agent(AGENT, "You keep the services running.", tools=(), model=model),
            instruction="Service X is slow: find out why and fix it.",
            task_id=task_id,
        )


def text_of(result: Any) -> str:
    """The one text content of a resource read."""
    [content] = result.contents
    return str(content.text)


def document(result: Any) -> dict[str, Any]:
    """The JSON document of a resource read."""
    return dict(json.loads(text_of(result)))

"""`ratchet submit`, `ratchet serve` and `ratchet mcp` given only a PgBouncer URL (transaction pooling).

Each is the real program, its ``--store`` the URL of a real PgBouncer in front
of the test's database (tests/helpers/pgbouncer.py): a task submitted through
it is listed over HTTP by `ratchet serve` and read through `ratchet mcp` by
the official MCP SDK's client.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from ..helpers.cli import RunRatchet, ratchet_command
from ..mcp.server.support import connect, environment, free_port, mcp_command

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
SCRIPT = HELPERS / "failover_script.json"
TOOLS = HELPERS / "failover_tools.py"
STARTUP = 30.0  # seconds `ratchet serve` may take to answer
AT_ONCE, ROUNDS = 4, 8


def _submit(run_ratchet: RunRatchet, url: str) -> str:
    done = run_ratchet(
        "submit", "record build and ship", "--model", f"scripted:{SCRIPT}", "--tools", str(TOOLS),
        "--json", "--store", url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    task_id: str = json.loads(done.stdout)["task_id"]
    return task_id


def _listed_over_http(url: str, cwd: Path) -> list[list[str]]:
    """The task ids `ratchet serve` lists at GET /api/tasks, asked `AT_ONCE` at a time, `ROUNDS` times.

    So the server's connections run the listing's statements more often than psycopg's five before
    it prepares one, each on whichever of PgBouncer's server connections is free.
    """
    port = free_port()
    server = subprocess.Popen(
        ratchet_command("serve", "--store", url, "--port", str(port)),
        cwd=cwd,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            try:
                listed = httpx.get(f"http://127.0.0.1:{port}/api/tasks", timeout=10)
                break
            except httpx.ConnectError:
                if server.poll() is not None or time.monotonic() > deadline:
                    server.kill()
                    raise AssertionError(f"ratchet serve did not answer: {server.communicate()[1]}") from None
                time.sleep(0.1)
        answers = [listed]
        tasks = f"http://127.0.0.1:{port}/api/tasks"
        with ThreadPoolExecutor(AT_ONCE) as clients:
            for _ in range(ROUNDS):
                answers += clients.map(lambda _: httpx.get(tasks, timeout=30), range(AT_ONCE))
        assert [answer.status_code for answer in answers if answer.status_code != 200] == [], answers[-1].text
        return [[task["task_id"] for task in answer.json()["tasks"]] for answer in answers]
    finally:
        server.terminate()
        server.wait(timeout=30)


async def test_submit_serve_and_mcp_work_given_only_the_pgbouncer_url(
    run_ratchet: RunRatchet, pgbouncer_url: str, tmp_path: Path
) -> None:
    task_id = _submit(run_ratchet, pgbouncer_url)

    assert _listed_over_http(pgbouncer_url, tmp_path) == [[task_id]] * (1 + AT_ONCE * ROUNDS)

    async with connect("stdio", mcp_command(pgbouncer_url)) as client:
        called = await client.call_tool("get_state", {"task_id": task_id})
    assert not called.is_error, called
    assert called.structured_content is not None
    assert (called.structured_content["task_id"], called.structured_content["status"]) == (task_id, "queued")
    assert called.structured_content["instruction"] == "record build and ship"

"""A project whose workflow lives in the script that runs it, as a new user writes one.

`ORDER` is the code every script, notebook and REPL test runs: a side effect
(a line in ``ledger.txt``), a read-only tool that waits until a file ``go``
appears (and says it waits by making ``waiting``), then a second effect. A
process killed or interrupted while it waits has done the first effect and
not the second; run again, it must do the second only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ORDER = """
import asyncio
import os
from pathlib import Path

import ratchet


@ratchet.tool
def effect(name: str, ctx: ratchet.ToolContext) -> str:
    with Path("ledger.txt").open("a") as ledger:  # blindly: an effect done twice shows twice
        ledger.write(name + "\\n")
    return name


@ratchet.tool(risk="read_only")
async def wait_for(path: str) -> str:
    Path("waiting").touch()
    while not Path(path).exists():
        await asyncio.sleep(0.05)
    return path


@ratchet.workflow(tools=[effect, wait_for])
async def order(ctx: ratchet.Context, item: str) -> list[str]:
    charged = await ctx.call_tool("effect", {"name": f"charge {item}"})
    await ctx.call_tool("wait_for", {"path": "go"})
    shipped = await ctx.call_tool("effect", {"name": f"ship {item}"})
    return [charged, shipped]
"""

# What the script's main part does; it notes each time it runs in main.log.
RUN = """

async def main() -> None:
    with Path("main.log").open("a") as log:
        log.write("main\\n")
    async with ratchet.Runtime(os.environ["STORE"]) as rt:
        task = await rt.run(order, {"item": "book"}, task_id="order-42")
        print(task.id, task.status, task.result)
"""

SUBMIT = """

async def main() -> None:
    with Path("main.log").open("a") as log:
        log.write("main\\n")
    async with ratchet.Runtime(os.environ["STORE"]) as rt:
        print(await rt.submit(order, {"item": "book"}, task_id="order-42"))
"""

GUARDED = """

if __name__ == "__main__":
    asyncio.run(main())
"""

UNGUARDED = """

asyncio.run(main())
"""

PATIENCE = 60.0  # seconds a test waits for another process; generous, as CI machines are loaded


def write_script(project: Path, main: str, *, guarded: bool) -> Path:
    """Write ``app.py``: `ORDER`, the `main` part, run with or without the ``__main__`` guard."""
    project.mkdir(exist_ok=True)
    path = project / "app.py"
    path.write_text(ORDER + main + (GUARDED if guarded else UNGUARDED))
    return path


def script_env(store: str) -> dict[str, str]:
    return {**os.environ, "STORE": store}


def run_script(project: Path, store: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "app.py"],
        cwd=project,
        env=script_env(store),
        capture_output=True,
        text=True,
        timeout=PATIENCE * 2,
    )


def kill_while_waiting(project: Path, store: str) -> None:
    """Run ``python app.py`` and SIGKILL it once its task waits for ``go`` (one effect done)."""
    process = subprocess.Popen(
        [sys.executable, "app.py"],
        cwd=project,
        env=script_env(store),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_file(project / "waiting", process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=PATIENCE)
    assert process.returncode == -signal.SIGKILL


def wait_for_file(path: Path, process: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + PATIENCE
    while not path.exists():
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"the process ended before {path.name} appeared: {out}{err}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def ledger(project: Path) -> list[str]:
    path = project / "ledger.txt"
    return path.read_text().splitlines() if path.exists() else []


def main_runs(project: Path) -> int:
    path = project / "main.log"
    return len(path.read_text().splitlines()) if path.exists() else 0

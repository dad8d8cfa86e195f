"""`ratchet tasks --limit 0 --json` on thousands of tasks: printed as it reads, in bounded memory."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from ratchet.store import open_store

from ..helpers.builders import make_task
from ..helpers.cli import ratchet_command, ratchet_env

INSTRUCTION = "Summarise the overnight alerts and page whoever is on call. " * 10  # about 600 bytes


def _fill(url: str, count: int) -> None:
    """`count` tasks, made in one transaction (a listing does not care how they came)."""

    async def fill() -> None:
        store = await open_store(url)
        try:
            async with store.transaction() as tx:
                for number in range(count):
                    await tx.create_task(make_task(f"task-{number:05d}", instruction=INSTRUCTION))
        finally:
            await store.close()

    asyncio.run(fill())


# Starts the command and prints the most memory it held (kB). Measured from a small process of
# its own: a child forked from the test's process would count the test's memory as its peak.
PEAK_OF = """
import os, subprocess, sys
process = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], "w"))
_, status, usage = os.wait4(process.pid, 0)
print(usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss // 1024)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _listed(cwd: Path, url: str) -> tuple[list[dict[str, object]], int]:
    """What `ratchet tasks --limit 0 --json` printed, and the most memory the process held (kB)."""
    out = cwd / "listing.json"
    command = ratchet_command("tasks", "--limit", "0", "--json", "--store", url)
    done = subprocess.run(
        [sys.executable, "-c", PEAK_OF, str(out), *command],
        cwd=cwd,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text()), int(done.stdout)


def test_the_json_listing_holds_a_page_of_records_at_a_time_not_the_store(tmp_path: Path) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    few, many = 200, 6000
    _fill(f"sqlite:///{small / 'ratchet.db'}", few)
    _fill(f"sqlite:///{large / 'ratchet.db'}", many)

    few_listed, few_peak = _listed(small, f"sqlite:///{small / 'ratchet.db'}")
    many_listed, many_peak = _listed(large, f"sqlite:///{large / 'ratchet.db'}")

    # Still one JSON list of every record, in order.
    assert [task["task_id"] for task in few_listed] == [f"task-{n:05d}" for n in range(few)]
    assert [task["task_id"] for task in many_listed] == [f"task-{n:05d}" for n in range(many)]
    assert many_listed[-1]["instruction"] == INSTRUCTION
    # 30 times the tasks, a few MB more (the listing's ids). Holding every record took some 20 kB a
    # task: 120 MB more.
    assert many_peak - few_peak < 25_000, (few_peak, many_peak)

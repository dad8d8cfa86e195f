"""`ratchet events` reads a task's events a page at a time: all of them, in order, in bounded memory."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet.records import Event, Task, TaskStatus
from ratchet.store import open_store
from ratchet.views.event_feed import EVENTS_PAGE

from ..helpers.cli import ratchet_command, ratchet_env

MANY = 20_000
FILLER = "x" * 1000  # a kilobyte a message: all of them at once would be tens of megabytes
# Reading every event at once costs about 55 MB more than a few (measured); a page at a time about 5.
MEMORY_BOUND_KB = 25 * 1024


async def _fill(url: str, counts: dict[str, int], *, filler: str = "") -> None:
    """Make each task with its count of events, written directly through the store."""
    store = await open_store(url)
    try:
        for task_id, count in counts.items():
            await store.create_task(
                Task(id=task_id, name=task_id, instruction="x", agent="a", status=TaskStatus.COMPLETED)
            )
            for start in range(0, count, 1000):
                async with store.transaction() as tx:
                    for number in range(start + 1, min(count, start + 1000) + 1):
                        await tx.append_event(
                            Event(task_id=task_id, kind="progress", message=f"event {number} {filler}")
                        )
    finally:
        await store.close()


# Run in a fresh, small Python: a child forked from this (large) test process would start with
# this process's memory counted as its own, whatever the command itself then uses.
_MEASURED = (
    "import resource, subprocess, sys\n"
    "with open(sys.argv[1], 'wb') as out:\n"
    "    code = subprocess.call(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)\n"
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _events(url: str, task_id: str, *extra: str, out: Path) -> int:
    """Run `ratchet events` with stdout to `out`; return its peak resident memory, in KB."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURED,
            str(out),
            *ratchet_command("events", task_id, "--store", url, *extra),
        ],
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    code, peak = map(int, done.stdout.split())
    assert code == 0
    return peak


@pytest.mark.parametrize("as_json", [False, True])
def test_twenty_thousand_events_print_in_order_in_bounded_memory(tmp_path: Path, as_json: bool) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    asyncio.run(_fill(url, {"t-few": 5, "t-many": MANY}, filler=FILLER))
    extra = ("--json",) if as_json else ()

    baseline = _events(url, "t-few", *extra, out=tmp_path / "few.out")
    peak = _events(url, "t-many", *extra, out=tmp_path / "many.out")

    lines = (tmp_path / "many.out").read_text().splitlines()
    assert len(lines) == MANY
    if as_json:
        assert [json.loads(line)["seq"] for line in lines] == list(range(1, MANY + 1))
    else:
        assert [int(line.split()[0]) for line in lines] == list(range(1, MANY + 1))
        assert all(f"event {n} x" in line for n, line in zip(range(1, MANY + 1), lines, strict=True))
    assert peak - baseline < MEMORY_BOUND_KB, f"peak {peak} KB against {baseline} KB for a few events"


def test_every_page_is_printed_on_each_store(url: str, tmp_path: Path) -> None:
    count = EVENTS_PAGE * 2 + 34
    asyncio.run(_fill(url, {"t-pages": count, "t-page": EVENTS_PAGE}))

    for task_id, expected in (("t-pages", count), ("t-page", EVENTS_PAGE)):
        for extra in ((), ("--follow",)):  # following an ended task prints every page, then returns
            _events(url, task_id, "--json", *extra, out=tmp_path / "out")
            seen = [json.loads(line) for line in (tmp_path / "out").read_text().splitlines()]
            assert [event["seq"] for event in seen] == list(range(1, expected + 1))
            assert [event["message"] for event in seen[:2]] == ["event 1 ", "event 2 "]

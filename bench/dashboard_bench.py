"""How the dashboard's task list holds up over 100,000 tasks while a worker finishes 20,000 of them.

Fills a fresh store (SQLite, and a throwaway PostgreSQL unless ``--only``)
with N tasks (default 100,000) through the store's own `create_task` in
batches (so every index, the labels and the text search hold them as a real
store would): N - Q ended tasks (every status, 20 names, 5 agents, a label
``team``, instructions of some 40 words) and Q queued tasks (default 20,000)
of a one-call workflow. Then it starts ``ratchet serve`` over the store and
measures:

1. the API: the list's first page (50 tasks, newest first) and a text search
   for one word (median of R reads), beside a health check, the server's own
   floor in the same run;
2. the page: from navigation to the list's first rows shown;
3. while ``ratchet worker --concurrency 8`` finishes the Q queued tasks (the
   stream sends a change for each): every 0.5 s, one ``page.evaluate``
   round trip (the page answers once it has drawn a frame) and the
   renderer's memory (the resident size of the largest of Chromium's
   renderer processes: the tab's); the median and the worst of each, and
   how many tasks the worker finished while the page was watched;
4. a text search typed into the page's search box: from Enter to the rows of
   the answer shown (typed alone, the box searches 300 ms after the last key).

Targets (issue 30): first rows under 1 s; round trip under 300 ms and the
renderer under 300 MB while the worker runs; a text search under 200 ms.

Run: ``python bench/dashboard_bench.py [--tasks N] [--queued Q] [--repeats R] [--only sqlite|postgresql]``
(Chromium as the dashboard tests find it: `scripts/install-system-packages`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
from playwright.sync_api import Page, sync_playwright

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import open_store

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' builders, server harness and throwaway cluster
from tests.dashboard.support import chromium_path, serving, working  # noqa: E402 (after the path above)
from tests.helpers.builders import make_task  # noqa: E402
from tests.helpers.pg import throwaway_cluster  # noqa: E402
from tests.helpers.task_page_flows import many_calls  # noqa: E402

ROWS = "#tasks tbody tr[data-task-id]"  # a row of the task list, as tasks.js draws it
SEARCH_BOX = "#task-search"
NAMES = [f"nightly-{word}" for word in ("backup", "report", "triage", "deploy", "audit")] + [
    f"job-{i:02d}" for i in range(15)
]
AGENTS = [f"agent-{i}" for i in range(5)]
ENDED = [TaskStatus.COMPLETED] * 6 + [TaskStatus.FAILED, TaskStatus.CANCELLED]
WORDS = [
    "summarise",
    "the",
    "overnight",
    "alerts",
    "of",
    "every",
    "region",
    "and",
    "file",
    "what",
    "needs",
    "a",
    "person",
]
RARE = "quetzal"  # one task in 1,000 says it: what the text search looks for
BATCH = 1000
WATCH_EVERY = 0.5


async def _fill(url: str, ended: int, queued: int) -> None:
    start = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    async with await open_store(url) as store:
        for first in range(0, ended, BATCH):
            async with store.transaction() as tx:
                for i in range(first, min(first + BATCH, ended)):
                    words = [*WORDS, RARE] if i % 1000 == 7 else WORDS
                    status = ENDED[i % len(ENDED)]
                    await tx.create_task(
                        make_task(
                            f"old-{i:06d}",
                            name=NAMES[i % len(NAMES)],
                            agent=AGENTS[i % len(AGENTS)],
                            instruction=" ".join(words * 3),
                            status=status,
                            labels={"team": f"team-{i % 7}"},
                            created_at=start + dt.timedelta(seconds=20 * i),
                        )
                    )
        runtime = Runtime(store)
        for i in range(queued):
            await runtime.submit(many_calls, {"count": 1}, task_id=f"new-{i:06d}", name="fresh")


def _median_ms(read: Callable[[], httpx.Response], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        answer = read()
        times.append((time.perf_counter() - began) * 1000)
        assert answer.status_code == 200, answer.text
    return statistics.median(times)


def _renderer_mb(browser_pid: int) -> float:
    """The resident memory of the largest Chromium renderer process (the page's tab), in MB."""
    sizes = [0]
    for child in psutil.Process(browser_pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "--type=renderer" in child.cmdline():
                sizes.append(child.memory_info().rss)
    return max(sizes) / 2**20


def _round_trip_ms(page: Page) -> float:
    began = time.perf_counter()
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done(true)))")
    return (time.perf_counter() - began) * 1000


def _queued(base: str) -> int:
    """How many tasks are still queued, as the API counts them (Playwright's loop owns this thread)."""
    answer = httpx.get(f"{base}/api/tasks", params={"status": "queued", "limit": 1}, timeout=60)
    assert answer.status_code == 200, answer.text
    total: int = answer.json()["total"]
    return total


def measure(kind: str, url: str, directory: Path, tasks: int, queued: int, repeats: int) -> None:
    began = time.perf_counter()
    asyncio.run(_fill(url, tasks - queued, queued))
    print(f"\n{kind}: {tasks:,} tasks ({queued:,} queued) made in {time.perf_counter() - began:.0f} s")
    with serving(directory, url) as server:
        with httpx.Client(base_url=server.base, timeout=60) as client:
            floor = _median_ms(lambda: client.get("/api/health"), repeats)
            first = _median_ms(
                lambda: client.get("/api/tasks", params={"limit": 50, "sort": "-created"}), repeats
            )
            found = _median_ms(
                lambda: client.get("/api/tasks", params={"limit": 50, "search": RARE}), repeats
            )
            matches = client.get("/api/tasks", params={"limit": 1, "search": RARE}).json()["total"]
            assert matches == len(range(7, tasks - queued, 1000)), matches  # the search finds what it should
        print("  API (median ms)")
        print(f"    health (the floor)             {floor:8.1f}")
        print(f"    first page of 50               {first:8.1f}   ({first / floor:.1f}x the floor)")
        print(
            f"    text search, one word          {found:8.1f}   ({found / floor:.1f}x the floor; "
            f"{matches} of {tasks:,} tasks match)"
        )

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
            browser_pid = _browser_pid()
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(120_000)
            blank = _renderer_mb(browser_pid)  # the same tab on about:blank: Chromium's own floor
            start = time.perf_counter()
            page.goto(server.base + "/")
            page.locator(ROWS).first.wait_for()
            shown = (time.perf_counter() - start) * 1000
            print("  page")
            print(f"    first rows shown               {shown:8.0f} ms   (target < 1000)")

            trips, memory = [], []
            with working(
                directory, url, "--concurrency", "8", "--allow-code", "tests.helpers.task_page_flows"
            ):
                watch_until = time.monotonic() + 600
                while time.monotonic() < watch_until:
                    time.sleep(WATCH_EVERY)
                    trips.append(_round_trip_ms(page))
                    memory.append(_renderer_mb(browser_pid))
                    if len(trips) % 20 == 0 and _queued(server.base) == 0:
                        break
            done = queued - _queued(server.base)
            print(f"    while a worker finished {done:,} of {queued:,} tasks ({len(trips)} looks):")
            print(
                f"      page.evaluate round trip     {statistics.median(trips):8.1f} ms median, "
                f"{max(trips):.1f} at most   (target < 300)"
            )
            print(
                f"      renderer memory              {statistics.median(memory):8.0f} MB median, "
                f"{max(memory):.0f} at most   (target < 300; the tab on about:blank: {blank:.0f} MB)"
            )

            searches = []
            for _ in range(repeats if page.locator(SEARCH_BOX).count() else 0):
                page.goto(server.base + "/")
                page.locator(ROWS).first.wait_for()
                box = page.locator(SEARCH_BOX)
                box.fill(RARE)
                began = time.perf_counter()
                box.press("Enter")  # at once; typing alone searches 300 ms after the last key
                page.wait_for_function(
                    "([rows, word, count]) => { const shown = [...document.querySelectorAll(rows)];"
                    " return shown.length === count && location.search.includes(word)"
                    " && shown.every((row) => row.dataset.taskId.startsWith('old-')); }",
                    arg=[ROWS, RARE, min(matches, 50)],
                )
                searches.append((time.perf_counter() - began) * 1000)
            if searches:
                typed = statistics.median(searches)
                print(f"    text search in the page        {typed:8.0f} ms   (target < 200)")
            else:
                print("    text search in the page        (the page has no search box)")
            browser.close()


def _browser_pid() -> int:
    """The newest Chromium browser process this bench started (Playwright does not say its pid)."""
    mine = [
        child
        for child in psutil.Process().children(recursive=True)
        if "chrom" in child.name().lower() and "--type=" not in " ".join(child.cmdline())
    ]
    newest: psutil.Process = max(mine, key=lambda process: process.create_time())
    return int(newest.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--queued", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    args = parser.parse_args()
    if chromium_path() is None:
        sys.exit("no chromium on PATH: run scripts/install-system-packages")
    for kind in ("sqlite", "postgresql"):
        if args.only not in (None, kind):
            continue
        with tempfile.TemporaryDirectory() as folder:
            directory = Path(folder)
            if kind == "sqlite":
                url = f"sqlite:///{directory / 'ratchet.db'}"
                measure("SQLite", url, directory, args.tasks, args.queued, args.repeats)
            else:
                with throwaway_cluster() as cluster, cluster.database() as url:
                    measure("PostgreSQL", url, directory, args.tasks, args.queued, args.repeats)


if __name__ == "__main__":
    main()

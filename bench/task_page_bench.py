"""How the task page holds up with a task of 10,000 calls, in headless Chromium over `ratchet serve`.

Makes one task of N journaled calls (default 10,000 clock reads in 10 steps,
through the real runtime: `tests.helpers.task_page_flows:many_calls`) in a
fresh SQLite file (or the store ``--store`` names), starts ``ratchet serve``
over it, and measures:

1. the API: a journal page of 200 at the start and at the end of the journal,
   a timeline page of 5,000, and the events' first page (median of R reads);
2. the page: from navigation to the first journal page shown, and to the
   timeline drawn (every call's attempts read and laid out);
3. what the timeline puts in the document: its call bars and elements, against
   the N rows it stands for;
4. scrolling the timeline from top to bottom in 40 steps: the median and
   slowest ``page.evaluate`` round trip of a scroll (the page answers only
   once it has drawn the rows in view);
5. "Load more" until the journal shows its last call: the time, and the page's
   JavaScript heap after.

Run: ``python bench/task_page_bench.py [--calls N] [--repeats R] [--store URL]``
(Chromium as the dashboard tests find it: `scripts/install-system-packages`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' workflows and server harness
from tests.dashboard.support import chromium_path, serving  # noqa: E402 (after the path above)
from tests.helpers.task_page_flows import run_here  # noqa: E402


def _median_ms(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


# Click "Load more" as soon as the last page shows, until the journal shows every call; the time (ms).
LOAD_ALL = """async () => {
  const button = document.querySelector('.more[data-list="calls"] button[data-action=load-more]');
  const rows = () => document.getElementById("journal").tBodies.length;
  const start = performance.now();
  while (!button.hidden) {
    const shown = rows();
    button.click();
    while (rows() === shown) await new Promise((next) => setTimeout(next, 0));
  }
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  return performance.now() - start;
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--store", help="a store URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    executable = chromium_path()
    if executable is None:
        sys.exit("no chromium on PATH: run scripts/install-system-packages")

    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        store = args.store or f"sqlite:///{directory / 'ratchet.db'}"
        start = time.perf_counter()
        task = run_here(store, "many_calls", {"count": args.calls, "steps": 10})
        took = time.perf_counter() - start
        print(f"made a task of {args.calls:,} calls in {took:.1f} s ({store.split(':')[0]})")

        with serving(directory, store) as server:
            base = f"{server.base}/api/tasks/{task.id}"
            with httpx.Client(timeout=60) as client:
                last = args.calls - 201
                api = {
                    "journal, first 200": lambda: client.get(f"{base}/journal", params={"limit": 200}),
                    "journal, last 200": lambda: client.get(
                        f"{base}/journal", params={"limit": 200, "after_seq": last}
                    ),
                    "timeline, 5,000 calls": lambda: client.get(f"{base}/timeline", params={"limit": 5000}),
                    "events, first 200": lambda: client.get(f"{base}/events", params={"limit": 200}),
                }
                print("\nAPI (median ms)")
                for name, read in api.items():
                    print(f"  {name:<24} {_median_ms(read, args.repeats):8.1f}")

            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=executable, headless=True)
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                page.set_default_timeout(120_000)
                start = time.perf_counter()
                page.goto(f"{server.base}/tasks/{task.id}")
                page.locator('.more[data-list="calls"] .page-count').filter(has_text="200 of").wait_for()
                first_page = time.perf_counter() - start
                page.locator("#timeline rect.call").first.wait_for(state="attached")
                drawn = time.perf_counter() - start
                print("\nPage")
                print(f"  first journal page shown   {first_page * 1000:8.0f} ms")
                print(f"  timeline drawn             {drawn * 1000:8.0f} ms")
                bars = page.locator("#timeline rect.call").count()
                nodes = page.evaluate("document.querySelectorAll('#timeline *').length")
                print(
                    f"  timeline bars in the page  {bars:8,} (for {args.calls:,} calls; {nodes:,} elements)"
                )

                height = page.evaluate("document.querySelector('#timeline .timeline-scroll').scrollHeight")
                trips = []
                for step in range(1, 41):
                    begin = time.perf_counter()
                    page.evaluate(
                        """top => new Promise((done) => {
                             const box = document.querySelector('#timeline .timeline-scroll');
                             box.scrollTop = top;
                             requestAnimationFrame(() => requestAnimationFrame(done));
                           })""",
                        height * step / 40,
                    )
                    trips.append((time.perf_counter() - begin) * 1000)
                seen = page.locator(f'#timeline rect.call[data-seq="{args.calls - 1}"]').count()
                print(
                    f"  a scroll of the timeline   {statistics.median(trips):8.1f} ms median, "
                    f"{max(trips):.1f} ms at most (last call drawn: {bool(seen)})"
                )

                # In the page, as a person clicking as soon as each page shows (Playwright's own locators
                # would walk a document of 10,000 rows at every check, and time themselves).
                loaded = page.evaluate(LOAD_ALL) / 1000
                heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0") / 2**20
                clicks = args.calls // 200
                print(f"  every call, page by page   {loaded:8.1f} s ({clicks} clicks); heap {heap:.0f} MB")
                browser.close()


if __name__ == "__main__":
    main()

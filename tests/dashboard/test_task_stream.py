"""The task page's stream panel in headless Chromium: the answer as it is written, each attempt apart.

The test writes the task's stream through the store `ratchet serve` reads (as
the engine does while a worker runs the task), and stops and starts the
server on the same port mid-answer: the page resumes with Last-Event-ID and
shows every piece once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Page, Request, expect

from ratchet.records import StreamEntry
from ratchet.store import open_store

from ..helpers.stream_entries import finish_task, new_task, start_task, stopped, story
from .conftest import OpenPage, Shoot
from .support import serving


def _write(
    url: str, *batches: list[StreamEntry], create: str | None = None, finish: str | None = None
) -> None:
    async def write() -> None:
        store = await open_store(url)
        try:
            if create is not None:
                await new_task(store, create)
                await start_task(store, create)
            for batch in batches:
                await store.append_stream(batch[0].task_id, batch)
            if finish is not None:
                await finish_task(store, finish)
        finally:
            await store.close()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # Playwright's sync API runs a loop here
        thread.submit(asyncio.run, write()).result()


def _text_of(page: Page, seq: int, nth: int) -> str:
    """The text of call `seq`'s `nth` block (0 for its first attempt shown)."""
    block = page.locator(f'#stream .stream-attempt[data-seq="{seq}"]').nth(nth).locator("pre.stream-text")
    return str(block.evaluate("pre => pre.textContent"))


def test_the_page_shows_the_answer_as_written_each_attempt_apart_and_resumes_after_a_dropped_connection(
    tmp_path: Path, open_page: OpenPage, shoot: Shoot
) -> None:
    store = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = "t-stream"
    batches = story(task_id)
    _write(store, *batches[:2], create=task_id)
    resumed_from: list[str | None] = []

    def note(request: Request) -> None:
        if request.url.endswith(f"/api/tasks/{task_id}/stream"):
            resumed_from.append(request.headers.get("last-event-id"))

    with serving(tmp_path, store) as server:
        page = open_page(server)
        page.on("request", note)
        page.goto(f"/tasks/{task_id}")
        panel = page.locator("#stream")
        expect(panel).to_be_visible()
        first = panel.locator('.stream-attempt[data-seq="3"]').nth(0)
        expect(first.locator("pre.stream-text")).to_have_text("The answer is 4")
        expect(first).to_have_attribute("data-state", "writing")
        port = urlsplit(server.base).port
        assert port is not None

    # The server is gone mid-answer (the page says it reconnects); the task writes on meanwhile.
    expect(page.locator("#stream .stream-state")).not_to_have_text("live")
    _write(store, *batches[2:5])
    with serving(tmp_path, store, port=port):
        # The resuming run makes attempt 1 again, with the same number: a block of its own.
        second = panel.locator('.stream-attempt[data-seq="3"]').nth(1)
        expect(second.locator("pre.stream-text")).to_have_text("The answer is 42.")
        expect(second).to_have_attribute("data-attempt", "1")
        expect(second).to_have_attribute("data-restarted", "true")
        # The cut attempt is marked, and its text is not run on into the retry's.
        expect(first).to_have_attribute("data-state", "cut")
        expect(first.locator(".stream-note")).to_have_text("cut off: what it wrote is not part of the answer")
        expect(second).to_have_attribute("data-state", "writing")
        _write(store, *batches[5:], finish=task_id)
        expect(second).to_have_attribute("data-state", "ended")
        expect(second.locator(".stream-note")).to_have_text(
            "begun again: attempt 1 was cut off; what it wrote is not part of the answer"
        )
        expect(panel.locator(".stream-state")).to_have_text("ended")
        expect(panel.locator('.stream-values li[data-key="progress"]')).to_have_text(
            'progress: {"done":1,"of":2}'
        )
        expect(panel.locator('.stream-values li[data-key="note"]')).to_contain_text("ünïcode")
        expect(panel.locator('.stream-attempt[data-seq="7"] pre.stream-text')).to_have_text("Second call.")
        shoot(page, "task-stream")

    # Every piece once, in order: the second connection went on after the last offset the first showed.
    assert _text_of(page, 3, 0) == "The answer is 4"
    assert _text_of(page, 3, 1) == "The answer is 42."
    assert panel.locator(".stream-attempt").count() == 3
    assert panel.locator(".stream-values li").count() == 2
    assert resumed_from[0] is None
    assert "2" in resumed_from[1:]  # offset 2 was the last the page had: the next connection says so


def test_a_stopped_attempt_made_again_then_failed_and_retried_shows_three_blocks_each_marked(
    tmp_path: Path, open_page: OpenPage
) -> None:
    store = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = "t-stream"
    _write(store, *stopped(task_id), create=task_id, finish=task_id)

    with serving(tmp_path, store) as server:
        page = open_page(server)
        page.goto(f"/tasks/{task_id}")
        panel = page.locator("#stream")
        expect(panel.locator(".stream-state")).to_have_text("ended")
        blocks = panel.locator('.stream-attempt[data-seq="3"]')
        expect(blocks).to_have_count(3)
        stopped_one, again, retry = blocks.nth(0), blocks.nth(1), blocks.nth(2)
        expect(stopped_one).to_have_attribute("data-state", "stopped")
        expect(stopped_one.locator(".stream-note")).to_have_text(
            "stopped: what it wrote is not part of the answer"
        )
        expect(again).to_have_attribute("data-restarted", "true")
        expect(again).to_have_attribute("data-state", "failed")
        expect(again.locator(".stream-note")).to_have_text("failed: ModelUnavailable")
        expect(again.locator(".stream-lost")).to_have_text(" (1 stream entry lost before this)")
        expect(retry).to_have_attribute("data-state", "ended")
        expect(retry.locator(".stream-note")).to_have_text("a retry: attempt 1 failed")

    assert [_text_of(page, 3, n) for n in range(3)] == ["Half an ans", "An ans", "The answer."]

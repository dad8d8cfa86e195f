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

from ..helpers.stream_entries import finish_task, new_task, start_task, story
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


def _text_of(page: Page, seq: int, attempt: int) -> str:
    block = page.locator(
        f'#stream .stream-attempt[data-seq="{seq}"][data-attempt="{attempt}"] pre.stream-text'
    )
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
        first = panel.locator('.stream-attempt[data-seq="3"][data-attempt="1"]')
        expect(first.locator("pre.stream-text")).to_have_text("The answer is 4")
        expect(first).to_have_attribute("data-state", "writing")
        port = urlsplit(server.base).port
        assert port is not None

    # The server is gone mid-answer (the page says it reconnects); the task writes on meanwhile.
    expect(page.locator("#stream .stream-state")).not_to_have_text("live")
    _write(store, *batches[2:5])
    with serving(tmp_path, store, port=port):
        second = panel.locator('.stream-attempt[data-seq="3"][data-attempt="2"]')
        expect(second.locator("pre.stream-text")).to_have_text("The answer is 42.")
        # The cut attempt is marked, and its text is not run on into the retry's.
        expect(first).to_have_attribute("data-state", "cut")
        expect(first.locator(".stream-note")).to_contain_text("not part of the answer")
        expect(second).to_have_attribute("data-state", "writing")
        _write(store, *batches[5:], finish=task_id)
        expect(second).to_have_attribute("data-state", "ended")
        expect(second.locator(".stream-note")).to_have_text("a retry: attempt 1 did not finish")
        expect(panel.locator(".stream-state")).to_have_text("ended")
        expect(panel.locator('.stream-values li[data-key="progress"]')).to_have_text(
            'progress: {"done":1,"of":2}'
        )
        expect(panel.locator('.stream-values li[data-key="note"]')).to_contain_text("ünïcode")
        expect(panel.locator('.stream-attempt[data-seq="7"] pre.stream-text')).to_have_text("Second call.")
        shoot(page, "task-stream")

    # Every piece once, in order: the second connection went on after the last offset the first showed.
    assert _text_of(page, 3, 1) == "The answer is 4"
    assert _text_of(page, 3, 2) == "The answer is 42."
    assert panel.locator(".stream-attempt").count() == 3
    assert panel.locator(".stream-values li").count() == 2
    assert resumed_from[0] is None
    assert "2" in resumed_from[1:]  # offset 2 was the last the page had: the next connection says so

"""Fixtures of the browser tests: the system Chromium under Playwright, a served store, screenshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from .support import INSTALL_HINT, Server, artifacts_dir, assert_png, chromium_path, serving

# Every wait of a test is bounded: a dashboard that does not show what is expected fails in seconds.
WAIT_MS = 20_000
VIEWPORT: ViewportSize = {"width": 1200, "height": 800}

OpenPage = Callable[[Server], Page]
Shoot = Callable[[Page, str], Path]


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright (which downloads no browser of its own)."""
    executable = chromium_path()
    if executable is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def server(tmp_path: Path, store: str) -> Iterator[Server]:
    """`ratchet serve` over the test's SQLite file, with no token file."""
    with serving(tmp_path, store) as served:
        yield served


@pytest.fixture
def open_page(browser: Browser) -> Iterator[OpenPage]:
    """Open a fresh tab (its own context: no sessionStorage shared) on a server; closed after the test."""
    contexts = []

    def open_on(served: Server) -> Page:
        context = browser.new_context(base_url=served.base, viewport=VIEWPORT)
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        return context.new_page()

    yield open_on
    for context in contexts:
        context.close()


@pytest.fixture
def shoot() -> Shoot:
    """Save a screenshot of the page under the artifacts folder's screenshots/; check it is a PNG."""
    folder = artifacts_dir() / "screenshots"

    def save(page: Page, name: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        path.unlink(missing_ok=True)
        page.screenshot(path=str(path), full_page=True)  # the whole page: the timeline is below the fold
        assert_png(path)
        return path

    return save

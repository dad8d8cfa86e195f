"""Acting from the task list in headless Chromium: Cancel with a confirmation and a reason (in the list
and on a task's page), Cancel all matching, and the list's pages in dark mode.
"""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from .conftest import VIEWPORT, OpenPage, Shoot
from .list_support import make_tasks
from .support import Server

ROWS = "table#tasks tbody tr"


def status_of(server: Server, task_id: str) -> str:
    status: str = server.task(task_id)["task"]["status"]
    return status


def test_cancel_asks_first_and_the_reason_given_is_kept_with_the_task(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    first, second = make_tasks(server.store, ["first errand", "second errand"])
    page = open_page(server)
    page.goto("/")
    row = page.locator(f'{ROWS}[data-task-id="{first}"]')
    dialog = page.locator("dialog#confirm")

    row.locator("button[data-action=cancel]").click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("first errand")
    dialog.locator("button[data-action=decline]").click()
    expect(dialog).to_have_count(0)
    row.locator("button[data-action=cancel]").click()
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert status_of(server, first) == "queued"  # asked twice, declined twice: nothing sent

    row.locator("button[data-action=cancel]").click()
    dialog.locator("textarea").fill("the wrong customer")
    shoot(page, "task-list-cancel-dialog")
    dialog.locator("button[data-action=confirm]").click()
    expect(row.locator("td.status")).to_have_text("cancelled")
    expect(row.locator("button[data-action=cancel]")).to_be_hidden()
    cancelled = server.task(first)["task"]
    assert (cancelled["status"], cancelled["error"]) == ("cancelled", "the wrong customer")

    page.goto(f"/tasks/{second}")
    expect(page.locator("#task-status")).to_have_text("queued")
    page.locator(".controls button[data-action=cancel]").click()
    expect(dialog).to_contain_text("second errand")
    dialog.locator("textarea").fill("not needed any more")
    dialog.locator("button[data-action=confirm]").click()
    expect(page.locator("#task-status")).to_have_text("cancelled")
    expect(page.locator("ol#events")).to_contain_text("Cancelled: not needed any more")
    assert server.task(second)["task"]["error"] == "not needed any more"


def test_cancel_all_matching_says_how_many_asks_then_cancels_only_those(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    billing = make_tasks(server.store, [f"bill {number}" for number in range(1, 6)], {"team": "billing"})
    support = make_tasks(server.store, ["help 1", "help 2", "help 3"], {"team": "support"})
    page = open_page(server)
    batch = page.locator("button[data-action=batch-cancel]")
    page.goto("/")
    expect(page.locator(ROWS)).to_have_count(8)
    expect(batch).to_be_hidden()  # no filter: no batch of every task
    page.goto("/?label=team%3Dbilling")
    expect(page.locator(ROWS)).to_have_count(5)
    expect(batch).to_have_text("Cancel all 5 matching…")
    dialog = page.locator("dialog#confirm")

    batch.click()
    expect(dialog.locator("h2")).to_have_text("Cancel 5 tasks?")
    dialog.locator("button[data-action=decline]").click()
    expect(dialog).to_have_count(0)
    assert [status_of(server, task_id) for task_id in billing + support] == ["queued"] * 8

    batch.click()
    dialog.locator("textarea").fill("billing is frozen")
    shoot(page, "task-list-batch-cancel")
    dialog.locator("button[data-action=confirm]").click()
    expect(page.locator("#tasks-notice")).to_have_text("Cancelled 5 of 5 tasks.")
    expect(page.locator(f"{ROWS} td.status")).to_have_text(["cancelled"] * 5)
    for task_id in billing:
        task = server.task(task_id)["task"]
        assert (task["status"], task["error"]) == ("cancelled", "billing is frozen")
    assert [status_of(server, task_id) for task_id in support] == ["queued"] * 3


def brightness(css: str) -> float:
    """The mean of a computed colour's red, green and blue (0 black, 255 white)."""
    red, green, blue = (int(part) for part in re.findall(r"\d+", css)[:3])
    return (red + green + blue) / 3


# The background and text colour of each element a selector finds first.
COLOURS = """(selectors) => selectors.map((selector) => {
  const style = getComputedStyle(document.querySelector(selector));
  return [selector, style.backgroundColor, style.color];
})"""


def assert_dark(page: Page, *selectors: str) -> None:
    """Each element has a dark background (its own or, when transparent, the page's) and light text."""
    page_background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    for selector, background, colour in page.evaluate(COLOURS, list(selectors)):
        shown = page_background if background == "rgba(0, 0, 0, 0)" else background
        assert brightness(shown) < 60, f"{selector}: background {background}"
        assert brightness(colour) > 150, f"{selector}: text {colour}"


def test_the_list_its_dialog_and_every_other_page_are_dark_when_the_system_is(
    browser: Browser, server: Server, shoot: Shoot
) -> None:
    [task_id] = make_tasks(server.store, ["in the dark"], {"team": "night"})
    context = browser.new_context(base_url=server.base, viewport=VIEWPORT, color_scheme="dark")
    try:
        page = context.new_page()
        page.goto("/?label=team%3Dnight")
        expect(page.locator(ROWS)).to_have_count(1)
        assert brightness(page.evaluate("getComputedStyle(document.body).backgroundColor")) < 40
        assert_dark(
            page,
            "body",
            "header",
            "#tasks th",
            "#tasks td.name",
            "#task-search",
            "#filter-kind",
            "#filter-chips .filter-chip",
            'button[data-status-filter="all"]',
            "button[data-action=next-page]",
        )
        shoot(page, "task-list-dark")
        page.locator(f'{ROWS}[data-task-id="{task_id}"] button[data-action=cancel]').click()
        assert_dark(page, "dialog#confirm", "dialog#confirm textarea")
        shoot(page, "task-list-dialog-dark")
        page.keyboard.press("Escape")

        for path, selector in (
            ("/sessions", "main h1"),
            ("/workers", "main h1"),
            (f"/tasks/{task_id}", "#task-facts"),
        ):
            page.goto(path)
            expect(page.locator(selector)).to_be_visible()
            assert_dark(page, "body", selector)
    finally:
        context.close()

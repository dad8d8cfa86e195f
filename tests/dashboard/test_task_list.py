"""The task list in headless Chromium: a page at a time, search and filters in the address, sorting, and
live changes applied only to the rows on screen.

`ratchet serve` runs over a SQLite file; the tasks are made, and moved, by the real runtime on that file
(list_support.py), as another client would.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from ratchet.records import Task
from ratchet.runtime import Runtime

from ..helpers.task_page_flows import on_store
from .conftest import OpenPage, Shoot
from .list_support import cancel, make_tasks, query
from .support import Server

ROWS = "table#tasks tbody tr"
# Every row of the table has the mark a test set on it: none was made again.
KEPT = "[...document.querySelectorAll('table#tasks tbody tr')].every((row) => row.__kept === true)"


def shown(first: int, last: int, total: int) -> str:
    """What the list says it shows: "Tasks 51, an en dash, 100 of 120"."""
    return f"Tasks {first}\u2013{last} of {total}"


def expect_names(page: Page, names: list[str]) -> None:
    """The list shows these tasks, top to bottom (waiting for it, as every `expect` does)."""
    expect(page.locator(f"{ROWS} td.name")).to_have_text(names)


def keep_rows(page: Page) -> None:
    page.evaluate("document.querySelectorAll('table#tasks tbody tr').forEach((r) => { r.__kept = true; })")


def test_120_tasks_are_listed_fifty_a_page_with_the_total_and_next_and_previous(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    names = [f"task {number:03}" for number in range(1, 121)]
    make_tasks(server.store, names)
    newest_first = names[::-1]
    page = open_page(server)
    page.goto("/")
    count = page.locator("#tasks-count")
    expect(count).to_have_text(shown(1, 50, 120))
    expect(page.locator(ROWS)).to_have_count(50)
    expect_names(page, newest_first[:50])
    expect(page.locator('th[aria-sort="descending"] button[data-sort="created"]')).to_be_visible()
    expect(page.locator("button[data-action=previous-page]")).to_be_disabled()
    shoot(page, "task-list-page-1")

    page.click("button[data-action=next-page]")
    expect(count).to_have_text(shown(51, 100, 120))
    expect_names(page, newest_first[50:100])
    assert "cursor" in query(page)
    page.click("button[data-action=next-page]")
    expect(count).to_have_text(shown(101, 120, 120))
    expect(page.locator(ROWS)).to_have_count(20)
    expect_names(page, newest_first[100:])
    expect(page.locator("button[data-action=next-page]")).to_be_disabled()

    page.reload()  # the address keeps the page; the history entry, the pages before it
    expect(count).to_have_text(shown(101, 120, 120))
    expect_names(page, newest_first[100:])
    page.click("button[data-action=previous-page]")
    expect(count).to_have_text(shown(51, 100, 120))
    expect_names(page, newest_first[50:100])
    page.click("button[data-action=previous-page]")
    expect(count).to_have_text(shown(1, 50, 120))
    expect_names(page, newest_first[:50])
    assert "cursor" not in query(page)
    assert page.locator(ROWS).count() == 50  # never more than the page shown


def test_search_and_filters_are_in_the_address_and_a_reload_a_shared_link_or_back_shows_them(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    names = ["refund order 12", "refund order 34", "invoice March"]
    billing = make_tasks(server.store, names, {"team": "billing"})
    make_tasks(server.store, ["refund request from Ann", "answer Bob"], {"team": "support"})
    cancel(server.store, billing[1])
    page = open_page(server)
    page.goto("/")
    expect(page.locator(ROWS)).to_have_count(5)
    expect(page.locator('button[data-status-filter="all"] span.count')).to_have_text("5")
    expect(page.locator('button[data-status-filter="queued"] span.count')).to_have_text("4")
    expect(page.locator('button[data-status-filter="cancelled"] span.count')).to_have_text("1")

    page.fill("#task-search", "refund")
    expect(page.locator(ROWS)).to_have_count(3)
    assert query(page) == {"search": ["refund"]}
    # The counts are of the search.
    expect(page.locator('button[data-status-filter="all"] span.count')).to_have_text("3")

    page.select_option("#filter-kind", "label")
    page.fill("#filter-value", "team=billing")
    page.click("button[data-action=add-filter]")
    chip = page.locator('#filter-chips .filter-chip[data-filter="label"]')
    expect(chip).to_contain_text("team=billing")
    expect(page.locator(ROWS)).to_have_count(2)
    page.click('button[data-status-filter="queued"]')
    expect(page.locator(ROWS)).to_have_count(1)
    expect_names(page, ["refund order 12"])
    assert query(page) == {"search": ["refund"], "status": ["queued"], "label": ["team=billing"]}
    shoot(page, "task-list-filtered")
    address = page.url

    page.reload()
    expect(page.locator("#task-search")).to_have_value("refund")
    expect(page.locator('button[data-status-filter="queued"]')).to_have_class(re.compile(r"\bcurrent\b"))
    expect(chip).to_have_count(1)
    expect(page.locator(ROWS)).to_have_count(1)
    expect_names(page, ["refund order 12"])

    shared = open_page(server)  # another tab, given the address
    shared.goto(address)
    expect(shared.locator(ROWS)).to_have_count(1)
    expect_names(shared, ["refund order 12"])
    expect(shared.locator("#task-search")).to_have_value("refund")

    page.locator(f"{ROWS} td.name a").click()
    page.wait_for_url(f"**/tasks/{billing[0]}")
    page.go_back()
    expect(page.locator("#task-search")).to_have_value("refund")
    expect(page.locator(ROWS)).to_have_count(1)
    assert page.url == address

    # A value the API refuses is its one line in place of the rows; the chip stays, to be removed.
    page.select_option("#filter-kind", "min_cost")
    page.fill("#filter-value", "abc")
    page.click("button[data-action=add-filter]")
    expect(page.locator("#tasks-message")).to_contain_text("min_cost")
    expect(page.locator(ROWS)).to_have_count(0)
    page.locator('#filter-chips .filter-chip[data-filter="min_cost"] button.remove').click()
    expect(page.locator(ROWS)).to_have_count(1)
    expect(page.locator("#tasks-message")).to_be_hidden()
    assert "min_cost" not in query(page)


def test_a_column_header_sorts_by_it_and_a_second_click_turns_the_direction(
    server: Server, open_page: OpenPage
) -> None:
    make_tasks(server.store, ["banana", "apple", "cherry"])
    page = open_page(server)
    page.goto("/")
    expect(page.locator(ROWS)).to_have_count(3)
    expect_names(page, ["cherry", "apple", "banana"])  # newest first

    by_name = page.locator("th.name button[data-sort=name]")
    by_name.click()
    expect(page.locator("th.name")).to_have_attribute("aria-sort", "ascending")
    expect_names(page, ["apple", "banana", "cherry"])
    assert query(page) == {"sort": ["name"]}
    by_name.click()
    expect(page.locator("th.name")).to_have_attribute("aria-sort", "descending")
    expect_names(page, ["cherry", "banana", "apple"])
    assert query(page) == {"sort": ["-name"]}
    expect(page.locator("th.created")).to_have_attribute("aria-sort", "none")

    page.reload()
    expect(page.locator("th.name")).to_have_attribute("aria-sort", "descending")
    expect_names(page, ["cherry", "banana", "apple"])
    page.locator("th.created button[data-sort=created]").click()  # times: the newest first
    expect(page.locator("th.created")).to_have_attribute("aria-sort", "descending")
    expect_names(page, ["cherry", "apple", "banana"])
    assert query(page) == {}


def test_a_change_on_screen_updates_its_row_in_place_and_one_off_screen_is_only_counted(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    ids = make_tasks(server.store, [f"job {number:02}" for number in range(1, 61)])  # the oldest ten: page 2
    page = open_page(server)
    page.goto("/")
    expect(page.locator("#tasks-count")).to_have_text(shown(1, 50, 60))
    keep_rows(page)

    newest = page.locator(f'{ROWS}[data-task-id="{ids[-1]}"]')
    cancel(server.store, ids[-1])
    expect(newest.locator("td.status")).to_have_text("cancelled")
    expect(newest.locator("button[data-action=cancel]")).to_be_hidden()
    assert page.evaluate(KEPT), "a row was made again"
    changed = page.locator("#tasks-changed")
    expect(changed).to_be_hidden()

    cancel(server.store, ids[0])  # off screen
    expect(changed).to_have_text("1 task changed or new — refresh")
    cancel(server.store, ids[1])
    expect(changed).to_have_text("2 tasks changed or new — refresh")
    assert page.evaluate(KEPT), "a row was made again"
    expect(page.locator(f"{ROWS} td.name").first).to_have_text("job 60")
    expect(page.locator(f'{ROWS}[data-task-id="{ids[0]}"]')).to_have_count(0)
    shoot(page, "task-list-changes-counted")

    changed.click()  # read the page again
    expect(changed).to_be_hidden()
    expect(page.locator('button[data-status-filter="cancelled"] span.count')).to_have_text("3")

    # Past the first page, a new task is counted too: its place is at the head, not here.
    page.click("button[data-action=next-page]")
    expect(page.locator("#tasks-count")).to_have_text(shown(51, 60, 60))
    keep_rows(page)
    make_tasks(server.store, ["job 61"])
    expect(changed).to_have_text("1 task changed or new — refresh")
    assert page.evaluate(KEPT), "a row was made again"
    expect(page.locator("#tasks-count")).to_have_text(shown(51, 60, 60))


NAMES = ("cheap", "free", "dear")


def test_the_cost_column_shows_what_each_task_cost_and_sorts_the_dearest_first(
    server: Server, open_page: OpenPage
) -> None:
    async def make(rt: Runtime) -> None:
        for name, cost in zip(NAMES, (0.000125, 0.0, 1234.5), strict=True):
            await rt.store.create_task(Task(id=f"{name}-1", name=name, instruction="x", cost=cost))

    on_store(server.store, make)
    page = open_page(server)
    page.goto("/")
    expect(page.locator(ROWS)).to_have_count(3)
    costs = {name: page.locator(f'{ROWS}[data-task-id="{name}-1"] td.cost') for name in NAMES}
    expect(costs["cheap"]).to_have_text("$0.000125")  # not rounded away
    expect(costs["free"]).to_have_text("-")
    expect(costs["dear"]).to_have_text("$1,234.5")

    page.locator("th.cost button[data-sort=cost]").click()
    expect(page.locator("th.cost")).to_have_attribute("aria-sort", "descending")
    expect_names(page, ["dear", "cheap", "free"])
    assert query(page) == {"sort": ["-cost"]}

"""The compare page in headless Chromium: tasks selected in the list, "Compare", side by side.

An origin and its fork with another input (`tests.helpers.task_page_flows`'s
`greets`) differ in exactly one tool call: the page marks that row, and only
that one.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime

from ..helpers.task_page_flows import FLOWS, on_store
from .conftest import OpenPage, Shoot
from .support import Server

ROWS = "table#tasks tbody tr"


def origin_and_fork(store: str) -> tuple[str, str]:
    """A `greets` task for Oslo and its fork after the first step for Bergen, both run to their end."""

    async def make(rt: Runtime) -> tuple[str, str]:
        origin = await rt.run(f"{FLOWS}:greets", {"who": "Oslo"}, name="greet Oslo")
        fork = await rt.fork(origin.id, 1, inputs={"who": "Bergen"})
        assert (await rt.resume(fork)).status is TaskStatus.COMPLETED
        return origin.id, fork

    return on_store(store, make)


def test_tasks_selected_in_the_list_open_side_by_side_with_the_differing_call_marked(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    origin, fork = origin_and_fork(server.store)
    page = open_page(server)
    page.goto("/")
    compare = page.locator("button[data-action=compare]")
    expect(page.locator(ROWS)).to_have_count(2)
    expect(compare).to_be_disabled()

    page.locator(f'{ROWS}[data-task-id="{origin}"] input[data-action=select]').check()
    expect(compare).to_be_disabled()  # one task is nothing to compare
    page.locator(f'{ROWS}[data-task-id="{fork}"] input[data-action=select]').check()
    expect(compare).to_be_enabled()
    expect(compare).to_have_text("Compare 2")
    shoot(page, "task-list-two-selected")
    compare.click()

    expect(page).to_have_url(re.compile(r"/compare\?task="))
    heads = page.locator("table#compare-tasks thead th a")
    expect(heads).to_have_text([origin, fork])
    calls = page.locator("table#compare-calls tbody tr")
    expect(calls).to_have_count(2)
    expect(calls.nth(0)).to_have_attribute("data-mark", "same")
    expect(calls.nth(1)).to_have_attribute("data-mark", "differs")
    expect(calls.nth(1)).to_have_class(re.compile(r"\bdiffers\b"))
    expect(calls.nth(1)).to_contain_text("Oslo")
    expect(calls.nth(1)).to_contain_text("Bergen")
    expect(page.locator("table#compare-calls tr.differs")).to_have_count(1)
    expect(page.locator("table#compare-steps tr.differs")).to_have_count(0)
    expect(page.locator("#compare-parting")).to_have_text(
        "Their journals share their first 1 call and part at seq 1."
    )
    expect(page.locator('table#compare-tasks tr[data-fact="status"] td')).to_have_text(
        ["completed", "completed"]
    )
    expect(page.locator('table#compare-tasks tr[data-fact="forked from"] td')).to_have_text(["", "column 1"])
    shoot(page, "compare-page")


def test_a_compare_address_it_cannot_show_is_one_line(server: Server, open_page: OpenPage) -> None:
    origin, _ = origin_and_fork(server.store)
    page = open_page(server)

    page.goto(f"/compare?task={origin}")
    expect(page.locator("main#page p.error")).to_have_text("compare takes at least 2 task ids; 1 given")

    page.goto(f"/compare?task={origin}&task=no-such-task")
    expect(page.locator("main#page p.error")).to_have_text(
        "no task with id 'no-such-task'; `ratchet tasks` lists the known ones"
    )

"""The dashboard in headless Chromium, against a real `ratchet serve`, `ratchet worker` and `ratchet run`.

The page under test is what a person opens: the server is a subprocess over a
SQLite file, tasks are queued by `ratchet run --detach` and run by a worker
process, and the browser only clicks what a person would click. A marker set
on `window` after a page loaded proves the page changed without a reload.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from ..cli.run_support import acts
from .conftest import OpenPage, Shoot
from .support import Server, calls, run_detached, serving, working, write_agent

MARK = "window.__ratchetTestMark = 'still the same page'"
MARKED = "window.__ratchetTestMark === 'still the same page'"


def mark(page: Page) -> None:
    """Set the marker a reload or a navigation would wipe."""
    page.evaluate(MARK)


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate(MARKED), "the page reloaded or navigated"


def test_the_list_shows_a_new_task_and_its_page_follows_it_live_to_the_approval(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    page = open_page(server)
    page.goto("/")
    expect(page.locator("table#tasks")).to_be_visible()
    expect(page.locator("form#login")).not_to_be_visible()  # no token file: never a login
    mark(page)

    model = write_agent(tmp_path, delay=1.0)
    task_id = run_detached(tmp_path, server.store, model)

    row = page.locator(f'table#tasks tr[data-task-id="{task_id}"]')
    expect(row.locator("td.status")).to_have_text("queued")
    expect(page.locator('button[data-status-filter="queued"] span.count')).to_have_text("1")
    expect(page.locator('button[data-status-filter="all"] span.count')).to_have_text("1")
    assert_not_reloaded(page)
    shoot(page, "task-list")

    row.locator(f'a[href="/tasks/{task_id}"]').click()
    page.wait_for_url(f"**/tasks/{task_id}")
    expect(page.locator("#task-status")).to_have_text("queued")
    expect(page.locator("#approval")).not_to_be_visible()
    mark(page)
    events = page.locator("ol#events > li")
    before = events.count()

    with working(tmp_path, server.store):
        # Each of the first two steps reports a second after its call: long enough to see it run.
        expect(page.locator("#task-status")).to_have_text(re.compile("running"))
        expect(page.locator("#approval button[data-action='approve']")).to_be_visible()
        expect(page.locator("#task-status")).to_have_text(re.compile("waiting"))

    assert_not_reloaded(page)
    seqs = [int(seq) for seq in events.evaluate_all("items => items.map(item => item.dataset.seq)")]
    assert len(seqs) > before and seqs == sorted(set(seqs)), seqs
    expect(page.locator("ol#plan > li[data-step-status]")).to_have_count(3)
    assert calls(tmp_path, "publish") == []  # it waits for a person
    shoot(page, "task-waiting-for-approval")


def test_approving_in_the_page_runs_the_call_once_and_the_task_completes(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    model = write_agent(tmp_path)
    task_id = run_detached(tmp_path, server.store, model)
    with working(tmp_path, server.store):
        server.wait_for_status(task_id, "waiting")
        page = open_page(server)
        page.goto(f"/tasks/{task_id}")
        approve = page.locator("#approval button[data-action='approve']")
        expect(approve).to_be_visible()
        expect(page.locator("#approval")).to_contain_text("publish")
        mark(page)

        approve.click()

        expect(page.locator("#task-status")).to_have_text("completed")
        expect(page.locator("#approval")).not_to_be_visible()
        assert_not_reloaded(page)
        # The journal and the timeline show the calls: record a, record b, and the approved publish.
        publish = page.locator("table#journal tbody tr").filter(has=page.get_by_text("publish", exact=True))
        expect(publish).to_have_count(1)
        attempts = page.locator("#timeline svg rect.call[data-attempt]")
        expect(attempts.first).to_be_attached()
        assert attempts.count() >= 3
        shoot(page, "task-completed")

    assert calls(tmp_path, "publish") == ["c"]
    assert server.task(task_id)["task"]["status"] == "completed"


def test_the_sessions_and_workers_pages_show_their_tables(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    page = open_page(server)
    with working(tmp_path, server.store):
        # A session is recorded when a task bound to it completes.
        model = write_agent(tmp_path, last=acts("c"))
        in_session = run_detached(tmp_path, server.store, model, "--session", "release-notes")
        server.wait_for_status(in_session, "completed")
        # The script is read again for each new task: this one's model waits, and its worker holds the lease.
        model = write_agent(tmp_path, delay=30.0)
        task_id = run_detached(tmp_path, server.store, model)
        server.wait_for_status(task_id, "running")
        page.goto("/workers")
        worker = page.locator("table#workers tbody tr")
        expect(worker).to_have_count(1)
        expect(worker.locator("td.heartbeat-age")).to_have_text(re.compile(r"\d"))
        expect(worker).to_contain_text(task_id)
        shoot(page, "workers")

    page.goto("/sessions")
    expect(page.locator("table#sessions tbody tr")).to_have_count(1)
    session = page.locator("table#sessions tbody tr")
    expect(session).to_contain_text("release-notes")
    expect(session.locator("td.turns")).to_have_text("—")  # an agent's session counts no chat turns
    shoot(page, "sessions")


def test_with_a_token_file_the_page_asks_for_the_token_and_keeps_a_good_one_for_the_tab(
    tmp_path: Path, store: str, open_page: OpenPage, shoot: Shoot
) -> None:
    with serving(tmp_path, store, token="s3cret-dashboard-token") as server:
        page = open_page(server)
        page.goto("/")
        login = page.locator("form#login")
        expect(login).to_be_visible()
        expect(page.locator("table#tasks")).not_to_be_visible()
        expect(page.locator("input#token")).to_have_attribute("type", "password")
        shoot(page, "login")

        page.fill("input#token", "not-the-token")
        page.click("form#login button[type=submit]")
        expect(page.locator("#login-error")).to_be_visible()
        expect(page.locator("#login-error")).not_to_have_text("")
        expect(login).to_be_visible()
        expect(page.locator("table#tasks")).not_to_be_visible()
        shoot(page, "login-bad-token")

        page.fill("input#token", "s3cret-dashboard-token")
        page.click("form#login button[type=submit]")
        expect(page.locator("table#tasks")).to_be_visible()
        expect(login).not_to_be_visible()
        assert page.evaluate("sessionStorage.getItem('ratchet-token')") == "s3cret-dashboard-token"
        mark(page)

        # The live list works with the token too (its stream needs it like every request).
        task_id = run_detached(tmp_path, store, write_agent(tmp_path))
        expect(page.locator(f'table#tasks tr[data-task-id="{task_id}"] td.status')).to_have_text("queued")
        assert_not_reloaded(page)

        page.reload()  # the tab keeps the token: no second prompt
        expect(page.locator(f'table#tasks tr[data-task-id="{task_id}"]')).to_be_visible()
        expect(login).not_to_be_visible()

        other_tab = open_page(server)  # a new tab of its own asks again
        other_tab.goto(f"/tasks/{task_id}")
        expect(other_tab.locator("form#login")).to_be_visible()
        expect(other_tab.locator("#task-status")).not_to_be_visible()

"""The schedules page and the workers page, in headless Chromium, against a real `ratchet serve`.

The schedule is made by `ratchet submit --every`, as the page's empty state
says; the page's Pause, Resume and Trigger go through the API, and the test
reads the store back after each, so what the row shows is what the store
holds. The worker is a real `ratchet worker`, idle, stopped with SIGTERM.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import expect

from ratchet.runtime import Runtime
from ratchet.schedules import Schedule

from ..helpers.cli import ratchet_runner
from ..helpers.task_page_flows import on_store
from .conftest import OpenPage, Shoot
from .support import Server, working, write_agent

MARK = "window.__ratchetTestMark = 'still the same page'"
MARKED = "window.__ratchetTestMark === 'still the same page'"


def stored_schedule(server: Server, schedule_id: str) -> Schedule:
    async def read(rt: Runtime) -> Schedule:
        [found] = [schedule for schedule, _ in await rt.schedules() if schedule.id == schedule_id]
        return found

    return on_store(server.store, read)


def test_the_schedules_page_pauses_resumes_and_triggers_a_schedule(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    page = open_page(server)
    page.goto("/schedules")
    empty = page.locator("#no-schedules")
    expect(empty).to_be_visible()
    expect(empty).to_contain_text("ratchet submit")
    expect(empty).to_contain_text("--every")
    expect(page.locator("nav a.current")).to_have_text("Schedules")
    shoot(page, "schedules-empty")
    page.evaluate(MARK)

    model = write_agent(tmp_path)
    made = ratchet_runner(tmp_path)(
        "submit", "send the digest", "-m", model, "--every", "0 9 * * *", "--tz", "Europe/Paris", "--json",
        "--store", server.store,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    schedule_id = json.loads(made.stdout)["schedule_id"]

    # The page reads the list again by itself: the schedule appears without a reload.
    row = page.locator(f'table#schedules tr[data-schedule-id="{schedule_id}"]')
    expect(row.locator("td.state")).to_have_text("active")
    expect(empty).to_be_hidden()
    assert page.evaluate(MARKED), "the page reloaded"
    expect(row.locator("td.every")).to_have_text("0 9 * * *")
    expect(row.locator("td.tz")).to_have_text("Europe/Paris")
    expect(row.locator("td.overlap")).to_have_text("skip")
    expect(row.locator("td.makes")).to_have_text("send the digest")
    due = row.locator("td.next-due time")
    # A relative time, the exact one on hover.
    expect(due).to_have_text(re.compile(r"^in "))
    expect(due).to_have_attribute("title", re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:00:00\.000Z"))
    expect(row.locator("td.last-task")).to_have_text("—")
    shoot(page, "schedules")

    row.locator("button[data-action=pause]").click()
    expect(row.locator("td.state")).to_have_text("paused")
    expect(row).to_have_attribute("data-paused", "true")
    expect(row.locator("td.next-due")).to_have_text("—")
    expect(row.locator("button[data-action=resume]")).to_be_visible()
    expect(row.locator("button[data-action=pause]")).to_have_count(0)
    assert stored_schedule(server, schedule_id).paused

    row.locator("button[data-action=trigger]").click()
    link = row.locator("td.last-task a")
    expect(link).to_have_text(re.compile(rf"^{re.escape(schedule_id)}-\d{{8}}T\d+Z-now$"))
    task_id = link.inner_text()
    expect(link).to_have_attribute("href", f"/tasks/{task_id}")
    expect(page.locator("#schedule-note")).to_contain_text(task_id)
    stored = stored_schedule(server, schedule_id)
    assert (stored.last_task, stored.paused) == (task_id, True)  # triggered while paused: it stays paused
    assert server.task(task_id)["task"]["status"] == "queued"

    row.locator("button[data-action=resume]").click()
    expect(row.locator("td.state")).to_have_text("active")
    expect(row.locator("td.next-due time")).to_have_text(re.compile(r"^in "))
    expect(row.locator("td.last-task a")).to_have_text(task_id)
    assert not stored_schedule(server, schedule_id).paused
    assert page.evaluate(MARKED), "the page reloaded"
    shoot(page, "schedules-triggered")

    link.click()
    page.wait_for_url(f"**/tasks/{task_id}")
    expect(page.locator("#task-status")).to_have_text("queued")


def test_the_workers_page_lists_an_idle_worker_with_its_slots_until_it_stops(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    page = open_page(server)
    with working(tmp_path, server.store, "--name", "idle-worker", "--concurrency", "3"):
        page.goto("/workers")
        row = page.locator('table#workers tr[data-worker="idle-worker"]')
        expect(row).to_have_attribute("data-live", "true")
        expect(row.locator("td.slots")).to_have_text("0 of 3")
        expect(row).to_have_attribute("data-concurrency", "3")
        expect(row.locator("td.live")).to_have_text("live")
        expect(row.locator("td.leases a")).to_have_count(0)
        expect(row.locator("td.started time")).to_have_attribute("title", re.compile(r"\d{4}-\d{2}-\d{2}T"))
        expect(row.locator("td.heartbeat-age time")).to_have_text(re.compile(r"\d.* ago$"))
        expect(row.locator("td.pid")).to_have_text(re.compile(r"^\d+$"))
        shoot(page, "workers-idle")
        page.evaluate(MARK)

    # Stopped with SIGTERM, it removed its record: the page's next read leaves it out.
    expect(page.locator("table#workers tbody tr")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("No live worker")
    assert page.evaluate(MARKED), "the page reloaded"

"""`ratchet eval --html`: the report opens in headless Chromium, whole, with nothing to fetch."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Request, expect

from ..helpers.cli import ratchet_runner
from ..helpers.eval_recordings import NEW_MODEL, record, write_files
from .conftest import VIEWPORT, WAIT_MS, Shoot


def test_the_eval_report_shows_the_totals_and_each_diff(
    browser: Browser, tmp_path: Path, shoot: Shoot
) -> None:
    write_files(tmp_path)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    [*_, changed] = record(tmp_path, url, same=3, changed=1)
    done = ratchet_runner(tmp_path)("eval", "--model", NEW_MODEL, "--html", "report.html", "--store", url)
    assert done.returncode == 0, done.stderr

    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        fetched: list[str] = []

        def note(request: Request) -> None:
            fetched.append(request.url)

        page.on("request", note)
        page.goto((tmp_path / "report.html").as_uri())

        expect(page).to_have_title(f"Eval of {NEW_MODEL}")
        totals = page.locator("#totals")
        expect(totals).to_contain_text("3 match, 1 differ, of 4 task(s).")
        expect(totals.locator("tr", has_text="tokens")).to_be_visible()
        expect(totals.locator("tr", has_text="latency")).to_be_visible()
        rows = page.locator("#tasks tr")
        expect(rows).to_have_count(5)  # the header and the four tasks
        expect(rows.filter(has_text=changed)).to_contain_text("diff")
        page.locator("#tasks a", has_text=changed).click()
        section = page.locator(f"section#task-{changed}")
        expect(section).to_be_in_viewport()
        expect(section.locator("ul.differences li")).to_have_text(
            "tool call not in the recording: append(line='two')"
        )
        calls = section.locator("tr", has_text="tool calls").locator("td")
        expect(calls.nth(0)).to_contain_text("append(line='TWO')")  # recorded
        expect(calls.nth(1)).to_contain_text("append(line='two')")  # the new model's
        expect(page.locator("section.task .match")).to_have_count(3)
        shoot(page, "eval-report")
        assert fetched == [(tmp_path / "report.html").as_uri()]  # nothing else: the file is whole
    finally:
        context.close()

"""The task page in headless Chromium: its journal past 1,000 calls, a call's whole payload, a model
call as a chat, the timeline of a long task and of a long wait, the children tree, what the task is,
dark mode and relative times.

Tasks are made by the real runtime: workflows of `tests.helpers.task_page_flows` run in this process
on the SQLite file `ratchet serve` reads, or an agent run by `ratchet run` with the scripted model.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect

from ..cli.run_support import acts
from ..helpers.cli import ratchet_runner
from ..helpers.task_page_flows import run_here
from .conftest import VIEWPORT, OpenPage, Shoot
from .support import Server, write_agent

BIG = 1250  # clock reads: past the 1,000 calls the page once stopped at


def journal_seqs(page: Page) -> list[int]:
    return [
        int(seq)
        for seq in page.locator("#journal > tbody").evaluate_all("rows => rows.map(r => r.dataset.seq)")
    ]


def test_the_journal_reaches_the_last_of_1250_calls_and_the_timeline_draws_only_what_is_in_view(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    task = run_here(server.store, "many_calls", {"count": BIG, "steps": 3})
    total = server.api("GET", f"/api/tasks/{task.id}/journal", params={"limit": 1}).json()["total"]
    assert total == BIG
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    footer = page.locator('.more[data-list="calls"]')
    expect(footer.locator(".page-count")).to_have_text(f"200 of {total:,} calls")
    shoot(
        page, "task-1250-calls"
    )  # (a screenshot of the whole page once every call is shown is 60,000 px tall)

    more = footer.locator("button[data-action=load-more]")
    more.click()
    page.wait_for_function("n => document.querySelectorAll('#journal > tbody').length > n", arg=200)
    # Scrolled into view, the end of the list loads the next page by itself.
    while (shown := len(journal_seqs(page))) < total:
        footer.scroll_into_view_if_needed()
        page.wait_for_function("n => document.querySelectorAll('#journal > tbody').length > n", arg=shown)

    expect(footer.locator(".page-count")).to_have_text(f"{total:,} of {total:,} calls")
    expect(more).to_be_hidden()
    assert journal_seqs(page) == list(range(total))  # each call once, in order, the last one included
    expect(page.locator(f'#journal > tbody[data-seq="{total - 1}"]')).to_contain_text("now")

    # The timeline: a header per step and a row per call, in a scroll box; only the rows in view are drawn.
    scroller = page.locator("#timeline .timeline-scroll")
    height = page.locator("#timeline .timeline-space").evaluate(
        "space => space.getBoundingClientRect().height"
    )
    assert height == (total + 3) * 22  # a row per call and a header per step, each 22 px
    drawn = page.locator("#timeline rect.call").count()
    assert 0 < drawn < 100, drawn
    expect(page.locator('#timeline .step-header[data-step="3"]')).to_have_count(0)  # far below: not drawn yet
    scroller.evaluate("box => { box.scrollTop = box.scrollHeight; }")
    expect(page.locator(f'#timeline rect.call[data-seq="{total - 1}"]')).to_be_attached()
    expect(page.locator('#timeline rect.call[data-seq="0"]')).to_have_count(0)
    assert page.locator("#timeline rect.call").count() < 100


def test_a_step_of_the_timeline_folds_its_calls_away(server: Server, open_page: OpenPage) -> None:
    task = run_here(server.store, "many_calls", {"count": 30, "steps": 3})
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    header = page.locator('#timeline .step-header[data-step="1"]')
    expect(header).to_have_attribute("data-calls", "10")
    expect(page.locator('#timeline rect.call[data-seq="5"]')).to_be_attached()

    header.click()

    expect(page.locator('#timeline rect.call[data-seq="5"]')).to_have_count(0)
    expect(page.locator('#timeline .step-header[data-step="2"]')).to_be_attached()
    page.locator('#timeline .step-header[data-step="1"]').click()
    expect(page.locator('#timeline rect.call[data-seq="5"]')).to_be_attached()


def test_a_long_wait_is_drawn_short_and_the_calls_around_it_keep_their_width(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    # 30 clock reads, a durable sleep of 2 s, 30 more: the calls take a few milliseconds, the wait 2 s.
    task = run_here(server.store, "many_calls", {"count": 60, "steps": 2, "pause": 2.0}, wake_after=2.0)
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    gap = page.locator("#timeline .timeline-axis rect.gap")
    expect(gap).to_have_count(1)
    assert int(gap.get_attribute("data-ms") or 0) >= 2000
    expect(page.locator("#timeline .timeline-axis text.gap-label")).to_have_text(re.compile(r"⋯ 2\.\d s"))

    def x(seq: int) -> float:
        # Only the rows in view are drawn: scroll the call's row (after its step's header) into view.
        row = seq + 1 if seq < 30 else seq + 2
        page.locator("#timeline .timeline-scroll").evaluate(
            "(box, top) => { box.scrollTop = top; }", row * 22
        )
        return float(page.locator(f'#timeline rect.call[data-seq="{seq}"]').get_attribute("x") or "nan")

    width = float(page.locator("#timeline svg.timeline-rows").get_attribute("width") or "nan")
    first, last_before, first_after = x(0), x(29), x(31)  # call 30 is the sleep
    gap_width = float(gap.get_attribute("width") or "nan")
    # On a linear scale the 30 calls before the wait (a few ms of 2 s) would share under 1 % of the
    # width; here they share with those after it all the width but the break's.
    assert last_before - first > 0.1 * width, (first, last_before, width)
    assert first_after - last_before < gap_width + 0.05 * width
    shoot(page, "timeline-long-wait")


def test_a_call_opens_to_its_whole_input_and_output(server: Server, open_page: OpenPage) -> None:
    task = run_here(server.store, "many_calls", {"count": 2, "payload": 5000})
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    call = page.locator('#journal > tbody[data-seq="0"]')
    assert len(call.locator("tr.call pre").first.inner_text()) == 200  # the list shows a preview

    call.locator("button[data-action=expand]").click()

    whole = call.locator("tr.call-detail .payload")
    expect(whole.locator(".input pre")).to_contain_text('"nested"')
    shown_input = json.loads(whole.locator(".input pre").inner_text())
    shown_output = json.loads(whole.locator(".output pre").inner_text())
    assert shown_input == {"text": "x" * 5000, "nested": {"numbers": [1, 2, 3]}}
    assert shown_output == {"length": 5000, "text": "x" * 5000, "nested": {"numbers": [1, 2, 3]}}
    assert "\n  " in whole.locator(".input pre").inner_text()  # indented
    call.locator("button[data-action=expand]").click()
    expect(call.locator("tr.call-detail")).to_be_hidden()


def test_a_model_call_reads_as_a_chat_with_its_tool_call_tokens_and_cost(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    model = write_agent(tmp_path, last=acts("c"))
    done = ratchet_runner(tmp_path)(
        "run", "keep the ledger", "-m", model, "--tools", "tools.py", "--store", server.store
    )
    assert done.returncode == 0, done.stderr
    [task] = server.api("GET", "/api/tasks").json()["tasks"]
    calls = server.api("GET", f"/api/tasks/{task['task_id']}/journal").json()["calls"]
    # The first act call answers with a tool call; the API has its usage.
    asking: dict[str, Any] = next(
        c for c in calls if c["name"] == "model:act" and "tool_calls" in c["output_preview"]
    )
    usage = asking["meta"]["usage"]
    page = open_page(server)
    page.goto(f"/tasks/{task['task_id']}")

    call = page.locator(f'#journal > tbody[data-seq="{asking["seq"]}"]')
    call.locator("button[data-action=expand]").click()

    chat = call.locator(".chat")
    expect(chat.locator("li.message")).to_have_count(
        3
    )  # the system prompt, the step's instruction, the answer
    expect(chat.locator('li[data-role="system"]')).to_contain_text("You are an agent carrying out one step")
    expect(chat.locator('li[data-role="user"]')).to_have_text(re.compile("record a"))
    answer = chat.locator('li[data-role="answer"]')
    expect(answer.locator(".tool-call code")).to_have_text("record")
    expect(answer.locator(".tool-call pre")).to_contain_text('"entry"')  # drawn, before it is read
    assert json.loads(answer.locator(".tool-call pre").inner_text()) == {"entry": "a"}
    figures = chat.locator(".chat-figures")
    expect(figures).to_contain_text(f"{usage['prompt_tokens']} in, {usage['completion_tokens']} out")
    expect(figures).to_contain_text(f"cost ${usage['cost']:.6f}")
    expect(figures).to_contain_text("purpose act")
    expect(figures).to_contain_text(model)
    # The next act call sends the tool's result back: the chat shows it as the tool's message.
    later = page.locator(f'#journal > tbody[data-seq="{asking["seq"] + 2}"]')
    later.locator("button[data-action=expand]").click()
    expect(later.locator('.chat li[data-role="tool"]')).to_contain_text("recorded a")
    expect(later.locator('.chat li[data-role="assistant"] .tool-call code')).to_have_text("record")
    shoot(page, "model-call-chat")


def test_the_page_says_what_the_task_is_and_shows_its_times_relative_with_exact_ones_on_hover(
    server: Server, open_page: OpenPage
) -> None:
    task = run_here(server.store, "travels", {"city": "Oslo"})
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")

    expect(page.locator("#task-inputs")).to_contain_text('"city": "Oslo"')
    expect(page.locator("#task-priority")).to_have_text(re.compile(r"^5 "))
    expect(page.locator('#state-facts tr[data-key="city"]')).to_have_count(2)
    expect(page.locator("#state-risks .chip")).to_have_text(["costly"])
    expect(page.locator("#state-questions")).to_have_text("None.")
    created = page.locator("#task-facts time").first
    expect(created).to_have_text(re.compile(r"seconds? ago|now"))
    expect(created).to_have_attribute("title", re.compile(r"\(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)$"))
    moment = dt.datetime.fromisoformat(created.get_attribute("datetime") or "")
    assert moment == task.created_at
    expect(page.locator("#events li time").first).to_have_attribute(
        "title", re.compile(r"\(\d{4}-\d\d-\d\dT")
    )


def test_the_children_tree_shows_every_level_with_status_and_the_way_up(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    task = run_here(server.store, "family", {"depth": 3, "width": 2})
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")

    nodes = page.locator("#tree li[data-task-id]")
    expect(nodes).to_have_count(1 + 2 + 4 + 4)
    leaves = page.locator("#tree ul.tree > li > ul > li > ul > li > ul > li")
    expect(leaves).to_have_count(4)
    expect(leaves.first).to_have_attribute("data-status", "completed")
    expect(leaves.first.locator(".badge")).to_have_text("completed")
    shoot(page, "children-tree")

    first_child = page.locator("#tree ul.tree > li > ul > li").first
    first_child.locator("> .node button.fold").click()
    expect(first_child.locator("> ul")).to_be_hidden()
    first_child.locator("> .node button.fold").click()
    leaf = leaves.first.get_attribute("data-task-id")
    leaves.first.locator("a").click()
    page.wait_for_url(f"**/tasks/{leaf}")
    expect(page.locator("#tree .ancestors a")).to_have_count(3)
    expect(page.locator("#tree .ancestors a").first).to_have_text("family")


# The background and text colours of the page, a journal cell and the timeline's box.
COLOURS = """() => ["body", "#journal td", "#timeline .timeline-scroll"]
  .map((selector) => getComputedStyle(document.querySelector(selector)))
  .map((style) => [style.backgroundColor, style.color])"""


def test_dark_mode_follows_the_system_setting(browser: Browser, server: Server, shoot: Shoot) -> None:
    task = run_here(server.store, "travels", {"city": "Oslo"})
    found = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(base_url=server.base, viewport=VIEWPORT, color_scheme=scheme)
        try:
            page = context.new_page()
            page.goto(f"/tasks/{task.id}")
            expect(page.locator("#task-status")).to_have_text("completed")
            found[scheme] = page.evaluate(COLOURS)
            shoot(page, f"task-page-{scheme}")
        finally:
            context.close()

    def brightness(css: str) -> float:
        red, green, blue = (int(part) for part in re.findall(r"\d+", css)[:3])
        return (red + green + blue) / 3

    body_light, body_dark = found["light"][0], found["dark"][0]
    assert brightness(body_light[0]) > 200 and brightness(body_light[1]) < 80
    assert brightness(body_dark[0]) < 40 and brightness(body_dark[1]) > 200
    assert brightness(found["dark"][1][1]) > 200  # a table's text too
    assert brightness(found["dark"][2][0]) < 40  # and the timeline's background

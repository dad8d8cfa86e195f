"""Time travel on the task page, in headless Chromium: fork from a checkpoint (with a changed input),
retry a failed task from a chosen step, the diff of the agent state between two checkpoints; and a
journal that shows a running task's new calls as they come.

Each action goes through the API's own fork and retry; the test then reads the new task back from the
API, so what the page shows is what the store holds.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ratchet.records import Task
from ratchet.runtime import Runtime

from ..helpers.task_page_flows import FLOWS, on_store, run_here
from .conftest import OpenPage, Shoot
from .support import Server


def test_fork_from_a_checkpoint_with_a_changed_input_opens_the_new_task_linked_to_its_origin(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    task = run_here(server.store, "travels", {"city": "Oslo"})
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    rows = page.locator("#checkpoints tbody tr")
    expect(rows).to_have_count(len(server.api("GET", f"/api/tasks/{task.id}/checkpoints").json()))

    rows.first.locator("button[data-action=fork]").click()
    page.fill("#fork-inputs", '{"city": "Bergen"}')
    shoot(page, "fork-form")
    page.click("button[data-action=fork-confirm]")

    page.wait_for_url(re.compile(rf".*/tasks/{re.escape(task.id)}-fork1-\w+$"))
    new_id = page.url.rsplit("/", 1)[1]
    origin = page.locator("#task-origin")
    expect(origin).to_have_attribute("data-kind", "fork")
    expect(origin.locator("a")).to_have_attribute("href", f"/tasks/{task.id}")
    expect(origin).to_contain_text("at checkpoint 1")
    expect(origin).to_contain_text("inputs city changed")
    expect(page.locator("#task-inputs")).to_contain_text('"city": "Bergen"')
    forked = server.task(new_id)["task"]
    assert (forked["forked_from"], forked["status"], forked["inputs_params"]["city"]) == (
        task.id,
        "queued",
        "Bergen",
    )
    shoot(page, "forked-task")

    origin.locator("a").click()  # the link leads back
    page.wait_for_url(f"**/tasks/{task.id}")
    expect(page.locator("#task-status")).to_have_text("completed")


def test_a_fork_refused_by_the_server_says_why_and_starts_nothing(
    server: Server, open_page: OpenPage
) -> None:
    task = run_here(server.store, "travels", {"city": "Oslo"})
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    page.locator("#checkpoints button[data-action=fork]").first.click()
    page.fill("#fork-inputs", '{"city": NaN}')

    page.click("button[data-action=fork-confirm]")

    expect(page.locator("#flash")).to_have_text("the changed inputs must be JSON, which has no NaN")
    assert page.url.endswith(f"/tasks/{task.id}")
    assert server.api("GET", "/api/tasks").json()["total"] == 1


def test_retry_from_a_chosen_step_starts_a_new_task_from_that_step(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    task = run_here(server.store, "stumbles", {"steps": 3, "failing": 3})
    assert task.status == "failed"
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    choice = page.locator("#retry-step")
    expect(choice.locator("option")).to_have_text(["step 1: stage 1", "step 2: stage 2", "step 3: stage 3"])
    expect(choice).to_have_value("3")  # where it stopped, by default

    choice.select_option("2")
    shoot(page, "retry-from-step")
    page.click("button[data-action=retry-from-step]")

    page.wait_for_url(f"**/tasks/{task.id}-retry1")
    origin = page.locator("#task-origin")
    expect(origin).to_have_attribute("data-kind", "retry")
    expect(origin).to_contain_text("from step 2")
    expect(origin.locator("a")).to_have_attribute("href", f"/tasks/{task.id}")
    [told] = [
        e
        for e in server.api("GET", f"/api/tasks/{task.id}-retry1/events").json()["events"]
        if e["kind"] == "task_retry"
    ]
    assert (told["data"]["from"], told["data"]["step"]) == (task.id, 2)
    steps = server.api("GET", f"/api/tasks/{task.id}-retry1/steps").json()
    assert [(s["step"], s["status"]) for s in steps] == [(1, "completed"), (2, "current")]


def test_the_diff_of_the_agent_state_between_two_checkpoints(
    server: Server, open_page: OpenPage, shoot: Shoot
) -> None:
    task = run_here(server.store, "travels", {"city": "Oslo"})
    numbers = [c["checkpoint"] for c in server.api("GET", f"/api/tasks/{task.id}/checkpoints").json()]
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    expect(page.locator("#diff-from")).to_have_value(str(numbers[0]))
    expect(page.locator("#diff-to")).to_have_value(str(numbers[-1]))

    page.click("button[data-action=diff]")

    diff = page.locator("#state-diff")
    expect(diff.locator('[data-part="known_facts"] li.changed')).to_have_text(["~city: Oslo → OSLO"])
    expect(diff.locator('[data-part="known_facts"] li.added')).to_have_text(["+date: 2030-05-01"])
    expect(diff.locator('[data-part="open_questions"] li.removed')).to_have_text(["-which date?"])
    expect(diff.locator('[data-part="risk_flags"] li.added')).to_have_text(["+costly"])
    shoot(page, "state-diff")

    page.select_option("#diff-from", str(numbers[-1]))
    page.select_option("#diff-to", "")  # to the task as it is now
    page.click("button[data-action=diff]")
    expect(diff).to_have_text("No change in the agent state.")


def test_the_journal_shows_a_running_tasks_new_calls_as_they_come(
    server: Server, open_page: OpenPage
) -> None:
    # 40 calls, then the task waits for a message; once it is sent, 40 more.
    task = on_store(
        server.store, lambda rt: rt.run(f"{FLOWS}:many_calls", {"count": 80, "steps": 2, "hold": True})
    )
    assert task.waiting_on == "message"
    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    held = server.api("GET", f"/api/tasks/{task.id}/journal", params={"limit": 1}).json()["total"]
    expect(page.locator("#journal > tbody")).to_have_count(held)
    page.evaluate("window.__ratchetTestMark = 'same page'")

    async def send_and_resume(rt: Runtime) -> Task:
        await rt.send(task.id, "more", "go")
        return await rt.resume(task.id)

    finished = on_store(server.store, send_and_resume)

    total = server.api("GET", f"/api/tasks/{task.id}/journal", params={"limit": 1}).json()["total"]
    assert finished.status == "completed" and total > held
    expect(page.locator("#task-status")).to_have_text("completed")
    expect(page.locator("#journal > tbody")).to_have_count(total)
    expect(page.locator('.more[data-list="calls"] .page-count')).to_have_text(f"{total} of {total} calls")
    space = page.locator("#timeline .timeline-space")
    # The timeline has the new calls too: a row each, and a header for each step and for the wait between.
    expect(space).to_have_js_property("offsetHeight", (total + 3) * 22)
    assert page.evaluate("window.__ratchetTestMark") == "same page"

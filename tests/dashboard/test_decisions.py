"""A person's decisions on the task page, in headless Chromium: edited arguments, deny, an answer, errors.

Each test queues the scripted task with `ratchet run --detach`, lets a real
worker run it until it waits on a person, and decides with the page's
buttons only; what the tools did (their call log) and the API say the
decision took effect once.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from ..cli.run_support import acts
from .conftest import OpenPage, Shoot
from .support import Server, asks, calls, run_detached, working, write_agent


def waiting_page(server: Server, open_page: OpenPage, task_id: str, on: str) -> Page:
    """The task's page, once the worker left the task waiting on `on` (approval or input)."""
    shown = server.wait_for_status(task_id, "waiting")
    assert shown["task"]["waiting_on"] == on, shown["task"]
    page = open_page(server)
    page.goto(f"/tasks/{task_id}")
    return page


def test_edited_arguments_are_checked_as_json_then_the_call_runs_with_them_once(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    task_id = run_detached(tmp_path, server.store, write_agent(tmp_path))
    with working(tmp_path, server.store):
        page = waiting_page(server, open_page, task_id, "approval")
        page.click("#approval button[data-action='edit']")
        arguments = page.locator("textarea#approval-args")
        expect(arguments).to_be_visible()
        assert '"c"' in arguments.input_value()  # the arguments the model asked for

        arguments.fill("{not json")
        page.click("#approval button[data-action='approve-edited']")
        expect(page.locator("#flash")).to_contain_text("JSON")
        expect(page.locator("#task-status")).to_have_text("waiting")
        shoot(page, "task-edit-arguments-error")

        arguments.fill('{"entry": "edited"}')
        page.click("#approval button[data-action='approve-edited']")
        expect(page.locator("#task-status")).to_have_text("completed")

    assert calls(tmp_path, "publish") == ["edited"]


def test_deny_fails_the_call_without_running_it_and_the_agent_goes_on(
    server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    task_id = run_detached(tmp_path, server.store, write_agent(tmp_path))
    with working(tmp_path, server.store):
        page = waiting_page(server, open_page, task_id, "approval")
        page.fill("#approval input#deny-reason", "not on a Friday")
        page.click("#approval button[data-action='deny']")
        expect(page.locator("#task-status")).to_have_text("completed")
        expect(page.locator("#approval")).not_to_be_visible()

    assert calls(tmp_path, "publish") == []
    [approval] = server.api("GET", f"/api/tasks/{task_id}/approvals").json()
    assert approval["status"] == "denied" and "not on a Friday" in str(approval), approval


def test_a_question_is_answered_in_the_page_and_the_agent_gets_the_answer(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    task_id = run_detached(tmp_path, server.store, write_agent(tmp_path, last=asks("Which channel?")))
    with working(tmp_path, server.store):
        page = waiting_page(server, open_page, task_id, "input")
        expect(page.locator("#question")).to_contain_text("Which channel?")
        page.click("#question button[data-action='answer']")  # nothing written yet
        expect(page.locator("#flash")).not_to_have_text("")
        expect(page.locator("#task-status")).to_have_text("waiting")
        shoot(page, "task-question")

        page.fill("textarea#answer", "#releases")
        page.click("#question button[data-action='answer']")
        expect(page.locator("#task-status")).to_have_text("completed")
        expect(page.locator("#question")).not_to_be_visible()

    journal = server.api("GET", f"/api/tasks/{task_id}/journal", params={"full": "true"}).json()["calls"]
    assert any("#releases" in str(operation.get("output")) for operation in journal), journal


def test_markup_in_a_tool_argument_is_shown_as_text_and_never_runs(
    server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    markup = "<img src=x onerror=window.__ratchetInjected=true>"  # no quote: the JSON shows it as is
    task_id = run_detached(tmp_path, server.store, write_agent(tmp_path, last=acts(markup, tool="publish")))
    with working(tmp_path, server.store):
        page = waiting_page(server, open_page, task_id, "approval")
        expect(page.locator("#approval")).to_contain_text(markup)
        expect(page.locator("ol#events")).to_contain_text("publish")

    assert page.locator("#approval img, ol#events img, table#journal img").count() == 0
    assert page.evaluate("window.__ratchetInjected === undefined")


def test_an_approval_no_worker_ran_yet_says_what_runs_it_and_a_second_one_is_refused(
    server: Server, open_page: OpenPage, tmp_path: Path
) -> None:
    task_id = run_detached(tmp_path, server.store, write_agent(tmp_path))
    with working(tmp_path, server.store):
        page = waiting_page(server, open_page, task_id, "approval")
    expect(page.locator("#task-next")).to_be_hidden()  # it waits for a person, as the approval says

    page.click("#approval button[data-action='approve']")  # no worker runs now
    expect(page.locator("#task-waiting")).to_have_text("on timer")
    expect(page.locator("#task-next")).to_contain_text("Approved at ")
    expect(page.locator("#task-next")).to_contain_text(
        f"It runs when a running `ratchet worker` picks the task up, or now with `ratchet resume {task_id}`."
    )
    again = server.api("POST", f"/api/tasks/{task_id}/approve", json={})
    assert again.status_code == 409 and "approved already" in again.json()["detail"], again.text

    with working(tmp_path, server.store):
        expect(page.locator("#task-status")).to_have_text("completed")
        expect(page.locator("#task-next")).to_be_hidden()
    assert calls(tmp_path, "publish") == ["c"]

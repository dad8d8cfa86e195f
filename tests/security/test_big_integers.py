"""Big integers in the browser: what the approval page shows is what runs, digit for digit.

The attack: a tool's arguments hold an integer beyond 2**53. The browser's
JSON.parse makes it a double, so a page reading the API that way showed
9007199254740992 while Approve ran 9007199254740993, and "Edit arguments"
approved untouched sent the rounded number back, which then ran: a person
approved one amount and another moved. Here real `ratchet serve`, `ratchet
worker` and headless Chromium (SQLite and PostgreSQL) take a task that asks
three times to move such amounts (a negative one, more in a list and an
object); the page approves the first with Approve, the second with Edit
arguments left untouched, the third with other big integers typed in. What
the page showed, what the tool received (its ledger, written with Python's
json), what the journal holds and what the approvals record must be exactly
the digits stored or typed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from ..cli.run_support import script
from ..dashboard.support import INSTALL_HINT, Server, chromium_path, run_detached, serving, working

WAIT_MS = 20_000
BIG = 2**53 + 1  # 9007199254740993: JSON.parse reads 9007199254740992
ARGUMENTS = {"amount": BIG, "refund": -BIG, "legs": [BIG, {"fee": 2**64 + 1}]}
TYPED = {"amount": BIG + 2, "refund": -(2**63 + 1), "legs": [2**70 + 1, {"fee": 2**64 + 3}]}

TOOLS = '''
import json
from pathlib import Path

import ratchet

HERE = Path(__file__).parent


@ratchet.tool(risk="external_action")
def transfer(amount: int, refund: int, legs: list) -> str:
    """Move money (a person approves each call first); what it is given goes to the ledger."""
    with (HERE / "ledger.jsonl").open("a") as ledger:
        ledger.write(json.dumps({"amount": amount, "refund": refund, "legs": legs}) + "\\n")
    return "moved"
'''


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright (as tests/dashboard drives it)."""
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


def next_approval(server: Server, task_id: str, after: int) -> dict[str, Any]:
    """The task's pending approval once it waits for one of a call after seq `after`."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        pending = server.task(task_id)["pending_approvals"]
        if pending and pending[0]["seq"] > after:
            found: dict[str, Any] = pending[0]
            return found
        assert time.monotonic() < deadline, f"task {task_id} asks for no approval after {after}"
        time.sleep(0.1)


def shown_on(page: Page, seq: int) -> dict[str, Any]:
    """The arguments the page shows for the approval of call `seq`, as the JSON a person reads."""
    section = page.locator(f"#approval[data-seq='{seq}']")
    expect(section).to_be_visible()
    shown: dict[str, Any] = json.loads(section.locator("pre.arguments").text_content() or "")
    return shown


def test_the_page_shows_and_runs_big_integers_exactly(browser: Browser, url: str, tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    act: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "transfer", "arguments": ARGUMENTS}]},
        {"content": "moved"},
    ] * 3
    model = script(tmp_path, act=act, steps=("first", "second", "third"))
    task_id = run_detached(tmp_path, url, model)
    seen: dict[str, Any] = {}
    with serving(tmp_path, url) as server, working(tmp_path, url):
        context = browser.new_context(base_url=server.base)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        first = next_approval(server, task_id, after=-1)
        page.goto(f"/tasks/{task_id}")

        seen["approve: shown"] = shown_on(page, first["seq"])
        page.click("#approval button[data-action='approve']")

        second = next_approval(server, task_id, after=first["seq"])
        seen["edit untouched: shown"] = shown_on(page, second["seq"])
        page.click("#approval button[data-action='edit']")
        seen["edit untouched: in the box"] = json.loads(page.locator("textarea#approval-args").input_value())
        page.click("#approval button[data-action='approve-edited']")

        third = next_approval(server, task_id, after=second["seq"])
        seen["edited: shown"] = shown_on(page, third["seq"])
        page.click("#approval button[data-action='edit']")
        page.fill("textarea#approval-args", json.dumps(TYPED, indent=2))
        page.click("#approval button[data-action='approve-edited']")

        server.wait_for_status(task_id, "completed")
        context.close()
        approvals = server.api("GET", f"/api/tasks/{task_id}/approvals").json()
        journal = server.api("GET", f"/api/tasks/{task_id}/journal", params={"full": "true"}).json()["calls"]

    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    ran = {
        "the tool received": ledger,
        "the journal holds": [op["input"] for op in journal if op["name"] == "transfer"],
        "the approvals recorded as edited": [approval["edited_arguments"] for approval in approvals],
    }
    # One comparison, so a failure shows every difference at once.
    assert {**seen, **ran} == {
        "approve: shown": ARGUMENTS,
        "edit untouched: shown": ARGUMENTS,
        "edit untouched: in the box": ARGUMENTS,
        "edited: shown": ARGUMENTS,
        "the tool received": [ARGUMENTS, ARGUMENTS, TYPED],
        "the journal holds": [ARGUMENTS, ARGUMENTS, TYPED],
        "the approvals recorded as edited": [None, None, TYPED],
    }

"""A result a person types for a call in doubt is stored digit for digit, however large its integers.

The page sends the text typed, which the server reads with Python's JSON
reader: a browser's number (a double) never comes between, so 2**53 + 1 is
not stored as 2**53.
"""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import expect

from .conftest import OpenPage
from .support import Server, working
from .test_in_doubt import LEASE, leave_in_doubt

TYPED_RESULT = {"copied by hand": 2**53 + 1, "refund": -(2**64 + 1)}


def test_a_typed_result_keeps_every_digit(server: Server, open_page: OpenPage, tmp_path: Path) -> None:
    task_id = leave_in_doubt(server, tmp_path)
    with working(tmp_path, server.store, *LEASE):
        server.wait_for_status(task_id, "waiting")
        page = open_page(server)
        page.goto(f"/tasks/{task_id}")
        page.click("#in-doubt button[data-action='set-result']")
        page.fill("textarea#result", json.dumps(TYPED_RESULT))
        page.click("#in-doubt button[data-action='set-result-confirm']")
        expect(page.locator("#task-status")).to_have_text("completed")

    journal = server.api("GET", f"/api/tasks/{task_id}/journal", params={"full": "true"}).json()["calls"]
    [synced] = [operation for operation in journal if operation["name"] == "sync"]
    assert synced["output"] == TYPED_RESULT, synced

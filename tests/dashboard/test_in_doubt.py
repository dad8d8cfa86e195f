"""Calls in doubt settled on the task page, in headless Chromium: retry, skip, set a result.

A worker is killed with SIGKILL while a tool with side effects and no way to
be run again safely (no ToolContext, no reconcile) is in its call; the next
worker finds the call started with no result and leaves the task
waiting(in_doubt), for a person, who settles it with the page's buttons.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import OpenPage, Shoot
from .support import STOP_TIMEOUT, Server, calls, run_detached, working, write_agent

SYNC: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "sync", "arguments": {"entry": "c"}}]},
    {"content": "synced c"},
]
LEASE = ("--lease-ttl", "1")  # the killed worker's lease lapses at once


def leave_in_doubt(server: Server, tmp_path: Path) -> str:
    """Queue the task and kill its worker inside the `sync` call; return the task's id."""
    (tmp_path / "hold").touch()
    task_id = run_detached(tmp_path, server.store, write_agent(tmp_path, last=SYNC))
    with working(tmp_path, server.store, *LEASE) as worker:
        deadline = time.monotonic() + 20
        while calls(tmp_path, "sync") != ["c"]:
            assert worker.poll() is None and time.monotonic() < deadline, "the sync call did not start"
            time.sleep(0.05)
        worker.kill()
        worker.wait(STOP_TIMEOUT)
    (tmp_path / "hold").unlink()
    return task_id


@pytest.mark.parametrize("action", ["retry", "skip", "set-result"])
def test_a_call_in_doubt_is_settled_with_the_pages_buttons(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path, action: str
) -> None:
    task_id = leave_in_doubt(server, tmp_path)
    with working(tmp_path, server.store, *LEASE):
        shown = server.wait_for_status(task_id, "waiting")
        assert shown["task"]["waiting_on"] == "in_doubt", shown["task"]
        page = open_page(server)
        page.goto(f"/tasks/{task_id}")
        expect(page.locator("#in-doubt")).to_contain_text("sync")
        if action == "retry":
            shoot(page, "task-in-doubt")
        page.click(f"#in-doubt button[data-action='{action}']")
        if action == "set-result":
            page.fill("textarea#result", json.dumps("copied by hand"))
            page.click("#in-doubt button[data-action='set-result-confirm']")
        expect(page.locator("#task-status")).to_have_text("completed")
        expect(page.locator("#in-doubt")).not_to_be_visible()
        if action == "retry":  # the timeline shows both attempts of the call, apart
            expect(page.locator("#timeline svg rect.call[data-attempt='2']")).to_have_count(1)

    assert calls(tmp_path, "sync") == (["c", "c"] if action == "retry" else ["c"])
    journal = server.api("GET", f"/api/tasks/{task_id}/journal", params={"full": "true"}).json()["calls"]
    [synced] = [operation for operation in journal if operation["name"] == "sync"]
    expected = {"retry": "synced c", "skip": None, "set-result": "copied by hand"}[action]
    assert synced["output"] == expected, synced

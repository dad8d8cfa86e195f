"""The version of a task's code on its page in headless Chromium, and ``GET /api/tasks?code_version=``
over the real `ratchet serve` (docs/workers.md, "Code versions")."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ..helpers.task_page_flows import run_here
from .conftest import OpenPage
from .support import Server


def test_the_task_page_shows_the_code_version_and_the_api_finds_tasks_by_it(
    server: Server, open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v2.1-rc1")
    task = run_here(server.store, "travels", {"city": "Oslo"})
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v2.0")
    older = run_here(server.store, "travels", {"city": "Rome"})

    page = open_page(server)
    page.goto(f"/tasks/{task.id}")
    expect(page.locator("#task-code-version")).to_have_text("v2.1-rc1")
    expect(page.locator("#task-facts dt", has_text="Code version")).to_have_count(1)

    found = server.api("GET", "/api/tasks", params={"code_version": "v2.1-rc1"}).json()
    assert [t["task_id"] for t in found["tasks"]] == [task.id]
    assert found["tasks"][0]["code_version"] == "v2.1-rc1"
    assert server.api("GET", f"/api/tasks/{older.id}").json()["task"]["code_version"] == "v2.0"
    bad = server.api("GET", "/api/tasks", params={"code_version": "v 2"})
    assert bad.status_code == 400
    assert "code_version: 'v 2' is not a code version" in bad.json()["detail"]
    assert "\n" not in bad.json()["detail"]

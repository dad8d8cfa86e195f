"""A LangGraph thread on RatchetSaver in the dashboard, in headless Chromium: listed, its checkpoints as
steps, its pending writes and interrupt shown, answered with the page's form and resumed by a worker.

The graph's program, the server and the worker are real processes on one SQLite file; the graph is a
file of the test's directory, which the worker imports as the saver named it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import expect

from ratchet.integrations.langgraph import RatchetSaver

from ..helpers.cli import ratchet_env
from ..integrations import langgraph_approval_graph
from .conftest import OpenPage, Shoot
from .support import Server, working


def test_a_thread_is_listed_shown_answered_in_the_page_and_resumed_by_a_worker(
    server: Server, open_page: OpenPage, shoot: Shoot, tmp_path: Path
) -> None:
    source = Path(langgraph_approval_graph.__file__).read_text(encoding="utf-8")
    (tmp_path / "approval_graph.py").write_text(source, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "approval_graph.py", server.store, "t1", "--graph", "approval_graph:builder"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ratchet_env(),
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.splitlines()[-1])["next"] == ["ask"]

    page = open_page(server)
    page.goto("/")
    expect(page.locator("table#tasks tbody")).to_contain_text("langgraph:t1")
    page.goto("/tasks/langgraph:t1")
    expect(page.locator("#task-status")).to_have_text("waiting")
    expect(page.locator("#plan")).to_contain_text("step 0 (loop): plan")
    expect(page.locator("#plan")).to_contain_text("step 1 (loop): ask")
    expect(page.locator("#langgraph-writes")).to_contain_text("__interrupt__ by ask")
    expect(page.locator("#langgraph-interrupts")).to_contain_text("not answered yet")
    expect(page.locator("#question")).to_contain_text("ship it?")
    shoot(page, "langgraph-thread")

    with working(tmp_path, server.store):
        page.fill("textarea#answer", "yes")
        page.click("#question button[data-action='answer']")
        expect(page.locator("#task-status")).to_have_text("completed")
    expect(page.locator("#langgraph-interrupts")).to_contain_text('answered by a person: "yes"')
    expect(page.locator("#plan")).to_contain_text("step 2 (loop): ship")

    with RatchetSaver.from_conn_string(server.store) as saver:
        graph = langgraph_approval_graph.builder.compile(checkpointer=saver)
        state = graph.get_state({"configurable": {"thread_id": "t1"}})
    assert state.values["log"] == ["planned", "answer: yes", "shipped"]

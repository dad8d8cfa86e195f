"""The workspace is never code: what an agent writes there, no caller can make Ratchet run.

The whole chain, as an attacker plays it. A prompt-injected agent writes
``notes.py`` in its workspace with the built-in ``write_file`` (no approval
needed); its top level writes a marker file if it ever runs. Then every way a
caller has to name a tool source names it: the HTTP API of a real ``ratchet
serve``, ``create_task`` of a real ``ratchet mcp`` through the SDK's client,
the command line, and SQL straight into the store's task row for a worker or
a resume. Each is refused in one line, the task (if any) waits for its code,
the worker goes on, and the marker never appears.

Each runs with RATCHET_HOME at its default (the per-user state directory) and
inside the project (``RATCHET_HOME=<project>/state``, where the project root
covers it), the file named by its absolute path and by its path relative to
the project root.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from ratchet.records import TaskStatus, WaitReason

from ..helpers.cli import assert_one_line_error
from ..helpers.raw_sql import change_task_record
from ..helpers.scripts import calls
from .code_support import (
    SEAL_BROKEN,
    WAIT,
    Project,
    answers,
    free_port,
    project_env,
    running,
    scripted,
    sealed_again,
    stop_worker,
    wait_until,
)

NOTES = '''
import pathlib

import ratchet

pathlib.Path({marker!r}).write_text("ran")


@ratchet.tool
def take_note(text: str) -> str:
    """Keep a note."""
    return text
'''

NEVER_CODE = "never loaded as code"
HOMES = ["default-home", "home-in-project"]


@dataclass(frozen=True)
class Planted:
    """The agent's ``notes.py``, the project whose programs are attacked, and the marker."""

    project: Project
    notes: Path
    marker: Path
    model: str  # a model for the attacker's own tasks

    @property
    def sources(self) -> list[str]:
        """The file by its absolute path and by its path relative to the project root."""
        return [str(self.notes), os.path.relpath(self.notes, self.project.root)]

    def assert_never_ran(self) -> None:
        assert not self.marker.exists(), "the agent's notes.py ran"


def plant(tmp_path: Path, home: str, url: str) -> Planted:
    """Run a real agent task whose model writes ``notes.py`` with the built-in write_file."""
    root = tmp_path / "project"
    root.mkdir()
    project = Project(root, url, project_env(root / "state" if home == "home-in-project" else None))
    marker = tmp_path / "it-ran"
    write = calls(("write_file", {"path": "notes.py", "content": NOTES.format(marker=str(marker))}))
    injected = scripted(tmp_path / "models", write, steps=("take notes", "then more"))

    done = project.ratchet("run", "take notes", "-m", injected, "--max-steps", "1", "--json")

    assert done.returncode == 1, done.stderr  # failed at its step limit: its workspace is kept
    task = project.task(done.stdout.split('"task_id": "')[1].split('"')[0])
    notes = Path(task.workspace or "") / "notes.py"
    assert notes.is_file()
    planted = Planted(project, notes, marker, scripted(tmp_path / "models"))
    planted.assert_never_ran()  # writing it ran nothing
    return planted


@pytest.fixture(params=HOMES)
def planted(request: pytest.FixtureRequest, tmp_path: Path) -> Planted:
    """The agent's notes.py, on a SQLite store of the project."""
    return plant(tmp_path, request.param, f"sqlite:///{tmp_path / 'ratchet.db'}")


def test_by_default_the_workspace_is_outside_the_project(tmp_path: Path) -> None:
    planted = plant(tmp_path, "default-home", f"sqlite:///{tmp_path / 'ratchet.db'}")

    state = Path(os.environ["XDG_STATE_HOME"]).resolve()  # the per-user state directory
    assert planted.notes.is_relative_to(state / "ratchet" / "workspaces")
    assert not planted.notes.is_relative_to(planted.project.root.resolve())


# --------------------------------------------------------------------------- (1) the HTTP API


def test_the_http_api_refuses_a_workspace_file_as_a_tool_source(planted: Planted) -> None:
    project = planted.project
    before = project.task_ids()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running(project.start("serve", "--port", str(port))) as server:
        wait_until(lambda: answers(f"{base}/api/health"), server)
        refusals = [
            httpx.post(
                f"{base}/api/tasks",
                json={"instruction": "summarise the notes", "model": planted.model, "tools": [source]},
                timeout=WAIT,
            )
            for source in planted.sources
        ]
        assert server.poll() is None

    for answer in refusals:
        assert answer.status_code == 400, answer.text
        detail = answer.json()["detail"]
        assert NEVER_CODE in detail and "\n" not in detail
    assert project.task_ids() == before  # nothing stored
    planted.assert_never_ran()


# --------------------------------------------------------------------------- (2) MCP


async def test_mcp_create_task_refuses_a_workspace_file_as_a_tool_source(planted: Planted) -> None:
    project = planted.project
    before = await asyncio.to_thread(project.task_ids)  # the store is read in a loop of its own
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ratchet", "mcp", "--store", project.url],
        env=project.env,
        cwd=project.root,
    )
    async with Client(server, read_timeout_seconds=WAIT) as client:
        outcomes = [
            await client.call_tool(
                "create_task",
                {"instruction": "summarise the notes", "model": planted.model, "tools": [source]},
            )
            for source in planted.sources
        ]

    for outcome in outcomes:
        assert outcome.is_error
        [part] = outcome.content
        message = str(getattr(part, "text", ""))
        assert NEVER_CODE in message and "\n" not in message
    assert await asyncio.to_thread(project.task_ids) == before
    planted.assert_never_ran()


# --------------------------------------------------------------------------- (3) the command line


@pytest.mark.parametrize(
    "command",
    [
        ["run", "summarise the notes", "--tools"],
        ["submit", "summarise the notes", "--tools"],
        ["chat", "--tools"],
        ["worker", "--until-idle", "--workflows"],
    ],
    ids=["run", "submit", "chat", "worker-workflows"],
)
def test_the_command_line_refuses_a_workspace_file_as_code(planted: Planted, command: list[str]) -> None:
    project = planted.project
    before = project.task_ids()
    for source in planted.sources:
        model = {"worker": [], "chat": ["--model", planted.model]}.get(command[0], ["-m", planted.model])
        done = project.ratchet(*command, source, *model)

        assert_one_line_error(done, NEVER_CODE)
    assert project.task_ids() == before
    planted.assert_never_ran()


# --------------------------------------------------------------------------- (4) SQL into the store


WRITERS = {"database writer": SEAL_BROKEN, "writer holding the key": NEVER_CODE}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("home", HOMES)
def test_a_task_row_pointed_at_a_workspace_file_waits_and_the_worker_goes_on(
    url: str, tmp_path: Path, home: str, writer: str
) -> None:
    planted = plant(tmp_path, home, url)
    project = planted.project
    by_resume, by_worker = (project.submit("-m", planted.model) for _ in range(2))
    healthy = project.submit("-m", planted.model)
    for task_id, source in zip((by_resume, by_worker), planted.sources, strict=True):
        change_task_record(url, task_id, partial(_use_tools, source=source))
        if writer == "writer holding the key":
            change_task_record(url, task_id, sealed_again)
    refusal = WRITERS[writer]

    resumed = project.ratchet("resume", by_resume)

    assert_one_line_error(resumed, f"task {by_resume} waits for its code", refusal)
    _assert_waits_refused(project, by_resume, refusal)
    planted.assert_never_ran()

    with running(project.start("worker", "--poll", "0.05")) as worker:
        wait_until(lambda: project.task(healthy).status is TaskStatus.COMPLETED, worker)
        wait_until(lambda: project.task(by_worker).waiting_on is WaitReason.CODE, worker)
        time.sleep(0.5)  # it goes on working: still alive a moment later
        assert stop_worker(worker) == 0

    for task_id in (by_resume, by_worker):
        _assert_waits_refused(project, task_id, refusal)
    planted.assert_never_ran()


def _use_tools(record: dict[str, Any], source: str) -> None:
    agent = record["inputs_params"]["agent"]
    agent["tool_sources"] = [source]


def _assert_waits_refused(project: Project, task_id: str, refusal: str = NEVER_CODE) -> None:
    task = project.task(task_id)
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    refused = [e for e in project.events(task_id) if e.kind == "code_refused"]
    assert refused and refusal in refused[-1].message

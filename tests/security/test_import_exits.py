"""Code that fails to load never takes a worker down.

A tools module guarded the common way, exiting at import when a setting is
missing (``sys.exit("set API_KEY")``), or raising there (a settings class
that does not validate), is named by a task. It was fine where the task was
made (the setting was there); the worker has no such setting. The worker
sets that task aside, ``waiting(code)`` with one line naming the module and
what it raised, finishes the other task, and is still running afterwards.
On the command line, a module that exits is one line of bad input, exit 2,
as one that raises already was. A task row naming a program's entry point
(``venv.__main__``), whose import is itself the effect, is refused unimported.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from ratchet.records import TaskStatus, WaitReason

from ..helpers.cli import assert_one_line_error
from ..helpers.raw_sql import change_task_record
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

TOOLS = '''
import os
import sys

import ratchet

if not os.environ.get("SHOP_API_KEY"):
    {guard}


@ratchet.tool
def look_up(item: str) -> str:
    """Look an item up in the shop."""
    return item
'''

# How each module fails when imported without its setting, and the reason a person is given.
GUARDS = {
    "exit-message": ('sys.exit("set API_KEY")', "it exits when imported: sys.exit('set API_KEY')"),
    "exit-0": ("sys.exit(0)", "it exits when imported: sys.exit(0)"),
    "system-exit-3": ("raise SystemExit(3)", "it exits when imported: sys.exit(3)"),
    "exception": (  # as a settings class that does not validate says it: over several lines
        'raise RuntimeError("1 validation error for Settings\\napi_key\\n  Field required")',
        "RuntimeError: 1 validation error for Settings api_key Field required",
    ),
}


def shop(tmp_path: Path, url: str, guard: str) -> Project:
    """A project whose ``shop_tools.py`` fails to import unless SHOP_API_KEY is set."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "shop_tools.py").write_text(TOOLS.format(guard=GUARDS[guard][0]))
    return Project(root, url, project_env(None))


EXITS = sorted(guard for guard in GUARDS if guard != "exception")


@pytest.mark.parametrize("command", ["run", "submit"])
@pytest.mark.parametrize("source", ["shop_tools", "shop_tools.py"])
@pytest.mark.parametrize("guard", EXITS)  # an exception is one line already: tests/cli/test_cli_run.py
def test_tools_that_exit_at_import_are_one_line_of_bad_input(
    tmp_path: Path, guard: str, source: str, command: str
) -> None:
    project = shop(tmp_path, f"sqlite:///{tmp_path / 'ratchet.db'}", guard)

    done = project.ratchet(
        command, "price the basket", "-m", scripted(tmp_path / "models"), "--tools", source
    )

    named = "cannot import 'shop_tools'" if source == "shop_tools" else f"cannot load {project.root / source}"
    assert_one_line_error(done, f"--tools: {named}: {GUARDS[guard][1]}")
    assert project.task_ids() == []  # nothing stored


@pytest.mark.parametrize("guard", EXITS)
async def test_the_servers_answer_tools_that_exit_at_import_in_one_line_and_keep_serving(
    tmp_path: Path, guard: str
) -> None:
    project = shop(tmp_path, f"sqlite:///{tmp_path / 'ratchet.db'}", guard)
    asked = {
        "instruction": "price the basket",
        "model": scripted(tmp_path / "models"),
        "tools": ["shop_tools"],
    }
    said = f"tools: cannot import 'shop_tools': {GUARDS[guard][1]}"
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    with running(project.start("serve", "--port", str(port))) as server:
        await asyncio.to_thread(wait_until, lambda: answers(f"{base}/api/health"), server)
        async with httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
            refused = await http.post("/api/tasks", json=asked)
            health = await http.get("/api/health")
    mcp_server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ratchet", "mcp", "--store", project.url],
        env=project.env,
        cwd=project.root,
    )
    async with Client(mcp_server, read_timeout_seconds=WAIT) as client:
        outcome = await client.call_tool("create_task", asked)
        listed = await client.list_tools()  # still serving

    assert (refused.status_code, refused.json()) == (400, {"detail": said})
    assert health.status_code == 200
    assert outcome.is_error
    [part] = outcome.content
    assert said in str(getattr(part, "text", "")) and "\n" not in str(getattr(part, "text", ""))
    assert "create_task" in [tool.name for tool in listed.tools]
    assert await asyncio.to_thread(project.task_ids) == []


@pytest.mark.parametrize("guard", sorted(GUARDS))
def test_a_worker_sets_aside_a_task_whose_tools_fail_to_import_and_goes_on(
    url: str, tmp_path: Path, guard: str
) -> None:
    project = shop(tmp_path, url, guard)
    model = scripted(tmp_path / "models")
    broken = project.submit("-m", model, "--tools", "shop_tools", SHOP_API_KEY="where it was made")
    healthy = project.submit("-m", model)

    with running(project.start("worker", "--poll", "0.05")) as worker:  # no SHOP_API_KEY here
        wait_until(lambda: project.task(broken).waiting_on is WaitReason.CODE, worker)
        wait_until(lambda: project.task(healthy).status is TaskStatus.COMPLETED, worker)
        time.sleep(0.5)  # it goes on working: still alive a moment later
        assert stop_worker(worker) == 0

    task = project.task(broken)
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    [why] = [e.message for e in project.events(broken) if e.kind == "code_missing"]
    assert why == f"cannot import 'shop_tools': {GUARDS[guard][1]}"


@pytest.mark.parametrize("holds_the_key", [False, True], ids=["database writer", "writer holding the key"])
def test_a_task_row_naming_a_programs_main_waits_and_the_worker_goes_on(
    url: str, tmp_path: Path, holds_the_key: bool
) -> None:
    """A database writer names a program's entry point: importing ``venv.__main__`` would make a
    virtualenv named after the worker's first argument and exit; ``ratchet.__main__`` would run
    the command line inside the worker. Without the key the seal stops it; with it, the refusal
    of entry points."""
    project = shop(tmp_path, url, "exit-message")
    model = scripted(tmp_path / "models")
    as_tools, as_workflow, healthy = (project.submit("-m", model) for _ in range(3))
    change_task_record(url, as_tools, _tool_sources("venv.__main__"))
    change_task_record(url, as_workflow, _workflow("ratchet.__main__:app"))
    if holds_the_key:
        for task_id in (as_tools, as_workflow):
            change_task_record(url, task_id, sealed_again)

    with running(project.start("worker", "--poll", "0.05")) as worker:
        wait_until(lambda: project.task(healthy).status is TaskStatus.COMPLETED, worker)
        for task_id in (as_tools, as_workflow):
            wait_until(_waits_for_code(project, task_id), worker)
        time.sleep(0.5)  # it goes on working: still alive a moment later
        assert stop_worker(worker) == 0

    for task_id, named in ((as_tools, "venv.__main__"), (as_workflow, "ratchet.__main__")):
        [why] = [e.message for e in project.events(task_id) if e.kind == "code_refused"]
        if holds_the_key:
            assert why.startswith(f"{named} is a program's entry point (__main__)"), why
        else:
            assert SEAL_BROKEN in why, why
    assert not (project.root / "worker").exists()  # no virtualenv was made


def _tool_sources(source: str) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        record["inputs_params"]["agent"]["tool_sources"] = [source]

    return change


def _workflow(reference: str) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        record["workflow"] = reference

    return change


def _waits_for_code(project: Project, task_id: str) -> Callable[[], bool]:
    return lambda: project.task(task_id).waiting_on is WaitReason.CODE

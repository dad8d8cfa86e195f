"""What a database writer cannot do: make a run import code it does not trust, or touch a directory.

Each test writes a task row as anyone with the store could (a workflow
reference, a workspace), sealed as if the writer also held the signing key
(the seal is the first wall, tests/security/test_forged_rows.py; these test
the one behind it), then runs it as a worker or `resume` would: the
refused task waits for its code (``waiting(code)``) with an event naming what
was refused, nothing of the refused code runs, and an allowance (or the code
put in place) lets it finish.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet import Agent
from ratchet.engine import Worker
from ratchet.records import Event, Task, TaskStatus, Trigger, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers import agent_tools
from ..helpers.builders import make_task, sealed
from ..helpers.scripts import plan, say
from .flows import FLOWS, entries

GUARD = 20.0

EVIL = """
import pathlib
import ratchet

pathlib.Path({marker!r}).write_text("ran")


@ratchet.workflow
async def flow(ctx) -> str:
    return "it ran"
"""


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """The file the refused code would write if it ever ran."""
    return tmp_path / "marker"


@pytest.fixture
def evil(tmp_path: Path, marker: Path) -> Path:
    """A workflow file outside the project root (the test's directory is not the checkout)."""
    path = tmp_path / "elsewhere" / "evil.py"
    path.parent.mkdir()
    path.write_text(EVIL.format(marker=str(marker)))
    return path


@pytest.fixture
def outside_package(tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package importable by name from a directory outside the project; its __init__ writes the marker."""
    name = f"evilpkg_{tmp_path.name.replace('-', '_')}"
    package = tmp_path / "site" / name
    package.mkdir(parents=True)
    init = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('init')\n"
    (package / "__init__.py").write_text(init)
    (package / "flows.py").write_text(EVIL.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield name
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


async def written(store: StateStore, task_id: str, workflow: str, **fields: object) -> Task:
    """A queued task whose row says what a database writer chose."""
    task = sealed(make_task(task_id, workflow=workflow, **fields))
    async with store.transaction() as tx:
        await tx.create_task(task)
        await tx.put_trigger(Trigger(kind="start", task_id=task_id))
    return task


async def resumed(store: StateStore, task_id: str, **options: object) -> Task:
    """Resume the task as `ratchet resume` does: a Runtime that submitted nothing itself."""
    return await asyncio.wait_for(Runtime(store, **options).resume(task_id), GUARD)  # type: ignore[arg-type]


async def code_events(store: StateStore, task_id: str) -> list[Event]:
    return [e for e in await store.list_events(task_id) if e.kind in ("code_refused", "code_missing")]


# --------------------------------------------------------------------------- workflow code


async def test_a_workflow_file_outside_the_project_is_never_imported(
    each_store: StateStore, evil: Path, marker: Path
) -> None:
    await written(each_store, "t1", f"{evil}:flow")

    task = await resumed(each_store, "t1")

    assert not marker.exists(), "the refused file ran"
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    assert await each_store.get_task("t1") == task
    [event] = await code_events(each_store, "t1")
    assert event.kind == "code_refused"
    assert str(evil) in event.message and "--allow-code" in event.message
    assert await each_store.list_triggers("t1") == []  # waiting on a person: no worker claims it
    assert [t.task_id for t in await each_store.claim_tasks("w", 30.0, limit=5)] == []

    again = await resumed(each_store, "t1")

    assert (again.status, again.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    assert len(await code_events(each_store, "t1")) == 1, "the same refusal is said once"
    assert not marker.exists()


@pytest.mark.parametrize("allowance", ["the file", "its directory"])
async def test_allow_code_admits_the_file(
    each_store: StateStore, evil: Path, marker: Path, allowance: str
) -> None:
    await written(each_store, "t1", f"{evil}:flow")
    assert (await resumed(each_store, "t1")).waiting_on is WaitReason.CODE

    allowed = evil if allowance == "the file" else evil.parent
    task = await resumed(each_store, "t1", allow_code=[str(allowed)])

    assert (task.status, task.result) == (TaskStatus.COMPLETED, "it ran")
    assert marker.read_text() == "ran"


async def test_a_module_outside_the_project_is_refused_before_its_package_runs(
    each_store: StateStore, outside_package: str, marker: Path
) -> None:
    await written(each_store, "t1", f"{outside_package}.flows:flow")

    task = await resumed(each_store, "t1")

    assert not marker.exists(), "importing the module's package ran its __init__"
    assert outside_package not in sys.modules
    assert task.waiting_on is WaitReason.CODE
    [event] = await code_events(each_store, "t1")
    assert event.kind == "code_refused" and outside_package in event.message

    done = await resumed(each_store, "t1", allow_code=[outside_package])

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "it ran")


async def test_code_of_the_project_and_of_installed_packages_runs(
    each_store: StateStore, ledger: str
) -> None:
    await written(each_store, "mine", f"{FLOWS}:stepped", inputs_params={"ledger": ledger})
    await written(each_store, "installed", "ratchet.agent.loop:agent_loop", model="scripted:none.json")

    assert (await resumed(each_store, "mine")).status is TaskStatus.COMPLETED
    # The agent's module is installed code: it loads, and the task waits for its missing script alone.
    assert (await resumed(each_store, "installed")).waiting_on is WaitReason.CODE
    [event] = await code_events(each_store, "installed")
    assert event.kind == "code_missing" and event.message.startswith("scripted model: no script file at")


# --------------------------------------------------------------------------- missing code


async def test_missing_code_waits_and_resumes_once_it_is_back(
    each_store: StateStore, tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)  # the project root of the runs below
    await written(each_store, "t1", "flows_here.py:flow")

    task = await resumed(each_store, "t1")

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    [event] = await code_events(each_store, "t1")
    assert event.kind == "code_missing"
    assert "flows_here.py" in event.message and str(project) in event.message

    (project / "flows_here.py").write_text(EVIL.format(marker=str(marker)))
    done = await resumed(each_store, "t1")

    assert (done.status, done.result) == (TaskStatus.COMPLETED, "it ran")


# --------------------------------------------------------------------------- workspaces


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("RATCHET_HOME", str(home))
    return home


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory a database writer would like deleted."""
    directory = tmp_path / "victim"
    directory.mkdir()
    (directory / "precious.txt").write_text("keep me")
    return directory


async def agent_task(store: StateStore, script: str) -> str:
    """An agent task, queued; a run finishes it in one step and deletes its workspace."""
    agent = Agent("ops", tools=(agent_tools.check_status,), model=script)
    return await Runtime(store).submit(agent, instruction="look at X", queue=False)


@pytest.mark.parametrize("where", ["outside", "a link out of the root", "the root itself"])
async def test_a_workspace_outside_the_root_is_refused_and_never_deleted(
    each_store: StateStore, home: Path, victim: Path, script: object, where: str
) -> None:
    model = script({"plan": [plan("look", check="")], "act": [say("done")]})  # type: ignore[operator]
    task_id = await agent_task(each_store, model)
    stored = await each_store.get_task(task_id)
    recorded = victim
    if where == "a link out of the root":
        recorded = home / "workspaces" / "link"
        recorded.parent.mkdir(parents=True)
        recorded.symlink_to(victim)
    elif where == "the root itself":
        recorded = home / "workspaces"
        recorded.mkdir(parents=True)
        (recorded / "other-task").mkdir()
    await each_store.update_task(sealed(stored.model_copy(update={"workspace": str(recorded)})))

    task = await resumed(each_store, task_id)

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (home / "workspaces" / "other-task").is_dir() or where != "the root itself"
    [event] = await code_events(each_store, task_id)
    assert event.kind == "code_refused" and str(recorded) in event.message
    assert await each_store.list_ops(task_id) == [], "nothing ran"

    # Put right, it runs, and deletes only its own workspace.
    await each_store.update_task(sealed(task.model_copy(update={"workspace": stored.workspace})))
    done = await resumed(each_store, task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert (victim / "precious.txt").read_text() == "keep me"
    assert not Path(stored.workspace or "").exists()


async def test_a_workspace_of_another_home_is_taken_from_this_root(
    each_store: StateStore, home: Path, tmp_path: Path, script: object
) -> None:
    """A moved project's task recorded its workspace under the old home; the old one is not touched."""
    model = script({"plan": [plan("look", check="")], "act": [say("done")]})  # type: ignore[operator]
    task_id = await agent_task(each_store, model)
    stored = await each_store.get_task(task_id)
    old = tmp_path / "old-project" / ".ratchet" / "workspaces" / Path(stored.workspace or "").name
    old.mkdir(parents=True)
    (old / "left.txt").write_text("from before the move")
    await each_store.update_task(sealed(stored.model_copy(update={"workspace": str(old)})))

    done = await resumed(each_store, task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.workspace == stored.workspace
    assert (old / "left.txt").read_text() == "from before the move"


# --------------------------------------------------------------------------- the worker


async def test_the_worker_sets_refused_tasks_aside_and_runs_every_other(
    each_store: StateStore, evil: Path, marker: Path, ledger: str
) -> None:
    await written(each_store, "good-1", f"{FLOWS}:stepped", inputs_params={"ledger": ledger})
    await written(each_store, "refused", f"{evil}:flow")
    await written(each_store, "good-2", f"{FLOWS}:stepped", inputs_params={"ledger": ledger})

    await asyncio.wait_for(Worker(each_store, poll_interval=0.05).run(until_idle=True), GUARD)

    for good in ("good-1", "good-2"):
        assert (await each_store.get_task(good)).status is TaskStatus.COMPLETED
    assert len(entries(ledger)) > 0
    refused = await each_store.get_task("refused")
    assert (refused.status, refused.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    assert not marker.exists()

    # A worker started with the allowance tries it once, at its start, and finishes it.
    allowed = Worker(each_store, poll_interval=0.05, allow_code=[evil])
    await asyncio.wait_for(allowed.run(until_idle=True), GUARD)

    done = await each_store.get_task("refused")
    assert (done.status, done.result) == (TaskStatus.COMPLETED, "it ran")


async def test_a_worker_without_the_allowance_leaves_the_waiting_task_as_it_was(
    each_store: StateStore, evil: Path, marker: Path
) -> None:
    await written(each_store, "refused", f"{evil}:flow")
    await resumed(each_store, "refused")
    before = await each_store.list_events("refused")

    for _ in range(2):
        await asyncio.wait_for(Worker(each_store, poll_interval=0.05).run(until_idle=True), GUARD)

    assert (await each_store.get_task("refused")).waiting_on is WaitReason.CODE
    assert [e.kind for e in await each_store.list_events("refused")] == [e.kind for e in before]
    assert not marker.exists()

"""Code trust and portable tasks, run as real programs: what `resume`, `worker` and `run` load and where.

A task row written by anyone with the store cannot make a `ratchet` program
run code from outside its project (the directory it runs in), installed
packages and ``--allow-code``; the refused task waits (``waiting(code)``) and
the program says so in one line. A project moved elsewhere, its database
with it, resumes from the new place: its files are recorded relative to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ratchet.records import Approval, Task, TaskStatus, Trigger, WaitReason

from ..helpers.builders import make_task, sealed
from ..helpers.cli import LineReader, assert_one_line_error, ratchet_command, ratchet_env
from .run_support import TOOLS, acts, plan
from .task_support import FLOWS, SIGNAL_TIMEOUT, flow, with_store
from .test_cli_run import created_task, wait_until

EVIL = """
import pathlib
import ratchet

pathlib.Path({marker!r}).write_text("ran")


@ratchet.workflow
async def flow(ctx) -> str:
    return "it ran"
"""

APPROVED_TOOL = """

@ratchet.tool(risk="external_action")
def publish(entry: str, ctx: ratchet.ToolContext) -> str:
    \"\"\"Publish an entry (a person approves it first).\"\"\"
    _effect("publish", ctx.idempotency_key, entry)
    return f"published {entry}"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The directory the programs run in: their project root."""
    root = tmp_path / "project"
    root.mkdir()
    return root


def ratchet_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `ratchet ARGS...` in `cwd`, with no RATCHET_HOME: workspaces go to the per-user state
    directory (under the test's directory: tests/conftest.py sets XDG_STATE_HOME)."""
    env = {key: value for key, value in ratchet_env().items() if key != "RATCHET_HOME"}
    return subprocess.run(
        ratchet_command(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def start_in(cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = {key: value for key, value in ratchet_env().items() if key != "RATCHET_HOME"}
    return subprocess.Popen(
        ratchet_command(*args), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def write_task(url: str, task_id: str, workflow: str, *, seal: bool = True, **fields: Any) -> None:
    """Queue a task whose workflow reference is what a database writer chose.

    Sealed as if the writer also held the signing key (unless not `seal`):
    what stands behind the seal is tested here; tests/security, the seal.
    """
    task = make_task(task_id, workflow=workflow, **fields)

    async def write(store: Any) -> None:
        async with store.transaction() as tx:
            await tx.create_task(sealed(task) if seal else task)
            await tx.put_trigger(Trigger(kind="start", task_id=task_id))

    with_store(url, write)


def task_of(url: str, task_id: str) -> Task:
    return with_store(url, lambda store: store.get_task(task_id))


def event_kinds(url: str, task_id: str) -> list[str]:
    return [e.kind for e in with_store(url, lambda store: store.list_events(task_id))]


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    """A workflow file outside the project, and the marker it writes if it ever runs."""
    marker = tmp_path / "marker"
    path = tmp_path / "elsewhere" / "evil.py"
    path.parent.mkdir()
    path.write_text(EVIL.format(marker=str(marker)))
    return path, marker


# --------------------------------------------------------------------------- refused code


def test_a_task_without_a_seal_waits_until_an_operator_seals_it(url: str, project: Path) -> None:
    write_task(url, "t1", flow("greet"), seal=False, inputs_params={"who": "Ada"})

    refused = ratchet_in(project, "resume", "t1", "--store", url)

    assert_one_line_error(refused, "task t1 waits for its code", "carries no seal", "t1 --seal`")
    task = task_of(url, "t1")
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)

    done = ratchet_in(project, "resume", "t1", "--seal", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "sealed the code references of task t1" in done.stderr
    assert task_of(url, "t1").status is TaskStatus.COMPLETED
    assert "code_sealed" in event_kinds(url, "t1")


def test_resume_refuses_code_outside_the_project_until_it_is_allowed(
    url: str, project: Path, evil: tuple[Path, Path]
) -> None:
    path, marker = evil
    write_task(url, "t1", f"{path}:flow")

    done = ratchet_in(project, "resume", "t1", "--store", url)

    assert_one_line_error(done, "task t1 waits for its code", str(path), "--allow-code")
    assert not marker.exists(), "the refused file ran"
    task = task_of(url, "t1")
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    assert "code_refused" in event_kinds(url, "t1")

    allowed = ratchet_in(project, "resume", "t1", "--allow-code", str(path), "--store", url)

    assert allowed.returncode == 0, allowed.stderr
    assert marker.read_text() == "ran"
    assert task_of(url, "t1").result == "it ran"


def test_a_worker_sets_refused_tasks_aside_and_runs_the_others(
    url: str, project: Path, evil: tuple[Path, Path]
) -> None:
    path, marker = evil
    write_task(url, "refused", f"{path}:flow")
    write_task(url, "good", flow("three_steps"))

    done = ratchet_in(project, "worker", "--until-idle", "--poll", "0.05", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "task refused: waits for its code" in done.stderr
    assert task_of(url, "good").status is TaskStatus.COMPLETED
    assert task_of(url, "refused").waiting_on is WaitReason.CODE
    assert not marker.exists()

    allowed = ratchet_in(
        project, "worker", "--until-idle", "--poll", "0.05", "--allow-code", str(path.parent), "--store", url
    )

    assert allowed.returncode == 0, allowed.stderr
    assert task_of(url, "refused").result == "it ran"


@pytest.mark.parametrize("command", [["worker", "--until-idle"], ["resume", "t1"]])
def test_an_allowance_that_is_neither_path_nor_module_is_bad_input(
    url: str, project: Path, command: list[str]
) -> None:
    write_task(url, "t1", flow("three_steps"))

    done = ratchet_in(project, *command, "--allow-code", "not a module!", "--store", url)

    assert_one_line_error(done, "--allow-code", "neither a path nor a module name")
    assert task_of(url, "t1").status is TaskStatus.QUEUED


def test_an_old_task_with_an_absolute_path_inside_the_project_still_runs(url: str, project: Path) -> None:
    shutil.copy(FLOWS, project / "flows.py")
    write_task(url, "old", f"{project / 'flows.py'}:three_steps")

    done = ratchet_in(project, "resume", "old", "--store", url)

    assert done.returncode == 0, done.stderr
    assert task_of(url, "old").status is TaskStatus.COMPLETED


# --------------------------------------------------------------------------- portable tasks


def model_script(directory: Path, act: list[dict[str, Any]], steps: tuple[str, ...] = ("a", "b")) -> str:
    """The --model value of a script in `directory`, by its absolute path (a task records it
    relative to the project when it lies there)."""
    directory.mkdir(exist_ok=True)
    path = directory / "script.json"
    verdict = {"content": {"passed": True, "reason": "it is there"}}
    path.write_text(json.dumps({"plan": [plan(*steps)], "act": act, "verify": [verdict]}))
    return f"scripted:{path}"


def ledger_entries(directory: Path) -> list[str]:
    path = directory / "ledger.jsonl"
    return [json.loads(line)["entry"] for line in path.read_text().splitlines()] if path.exists() else []


def tool_calls(directory: Path) -> list[dict[str, str]]:
    path = directory / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def moved(project: Path) -> Path:
    """Move the whole project (its database with it) elsewhere; the old place is gone."""
    target = project.parent / "moved" / "project-here"
    target.parent.mkdir()
    shutil.move(str(project), str(target))
    assert not project.exists()
    return target


def test_a_killed_run_resumes_after_the_project_moved(project: Path, tmp_path: Path) -> None:
    (project / "tools.py").write_text(TOOLS)
    model = model_script(tmp_path / "model", [*acts("a"), *acts("b", tool="record_slowly", seconds=2)])
    process = start_in(project, "run", "keep the ledger", "-m", model, "--tools", "tools.py")
    reader = LineReader(process.stdout)  # type: ignore[arg-type]
    task_id = created_task(reader)
    wait_until(lambda: ledger_entries(project) == ["a", "b"], process)  # record_slowly is in its 2 s
    process.kill()
    process.wait(SIGNAL_TIMEOUT)

    new_place = moved(project)
    done = ratchet_in(new_place, "resume", task_id)

    assert done.returncode == 0, done.stderr
    assert ledger_entries(new_place) == ["a", "b"]  # each effect once
    slow = [call for call in tool_calls(new_place) if call["tool"] == "record_slowly"]
    assert len(slow) == 2 and slow[0]["key"] == slow[1]["key"]  # the call in flight ran again, same key
    task = task_of(f"sqlite:///{new_place / 'ratchet.db'}", task_id)
    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.inputs_params["agent"], dict)
    assert task.inputs_params["agent"]["tool_sources"] == ["tools.py"]  # relative to the project
    assert task.model == model  # a script outside the project: by its absolute path
    state = Path(os.environ["XDG_STATE_HOME"]).resolve()
    assert task.workspace == str(state / "ratchet" / "workspaces" / task_id)  # outside the project
    assert not Path(task.workspace).exists()  # and deleted on success


def test_a_run_stopped_at_an_approval_is_approved_and_finished_after_the_project_moved(
    project: Path, tmp_path: Path
) -> None:
    (project / "tools.py").write_text(TOOLS + APPROVED_TOOL)
    model = model_script(tmp_path / "model", [*acts("a", tool="publish")], steps=("a",))

    waiting = ratchet_in(project, "run", "publish it", "-m", model, "--tools", "tools.py", "--json")

    assert waiting.returncode == 3, waiting.stderr
    task_id = json.loads(waiting.stdout.splitlines()[-1])["task_id"]
    assert ledger_entries(project) == []

    new_place = moved(project)
    assert ratchet_in(new_place, "approve", task_id).returncode == 0
    done = ratchet_in(new_place, "resume", task_id)

    assert done.returncode == 0, done.stderr
    assert ledger_entries(new_place) == ["a"]
    assert [call["tool"] for call in tool_calls(new_place)] == ["publish"]


def test_missing_code_waits_and_resume_finishes_once_it_is_back(project: Path, tmp_path: Path) -> None:
    (project / "tools.py").write_text(TOOLS)
    model = model_script(tmp_path / "model", [*acts("a"), *acts("b")])
    queued = ratchet_in(project, "run", "keep the ledger", "-m", model, "--tools", "tools.py", "--detach")
    assert queued.returncode == 0, queued.stderr
    [task_id] = queued.stdout.split()
    (project / "tools.py").rename(project / "tools.py.away")

    done = ratchet_in(project, "resume", task_id)

    assert_one_line_error(done, f"task {task_id} waits for its code", "no Python file tools.py")
    url = f"sqlite:///{project / 'ratchet.db'}"
    assert task_of(url, task_id).waiting_on is WaitReason.CODE
    assert "code_missing" in event_kinds(url, task_id)
    shown = ratchet_in(project, "tasks", "--json")
    assert json.loads(shown.stdout)[0]["status"] == "waiting"

    (project / "tools.py.away").rename(project / "tools.py")
    again = ratchet_in(project, "resume", task_id)

    assert again.returncode == 0, again.stderr
    assert ledger_entries(project) == ["a", "b"]


def test_a_script_in_the_project_is_recorded_relative_and_found_after_the_project_moved(
    project: Path,
) -> None:
    """The task goes on from its script's next entry in the new place: nothing is taken twice."""
    (project / "tools.py").write_text(TOOLS + APPROVED_TOOL)
    model = model_script(project / "scripts", [*acts("a"), *acts("b", tool="publish")])

    waiting = ratchet_in(project, "run", "keep the ledger", "-m", model, "--tools", "tools.py", "--json")

    assert waiting.returncode == 3, waiting.stderr
    task_id = json.loads(waiting.stdout.splitlines()[-1])["task_id"]
    task = task_of(f"sqlite:///{project / 'ratchet.db'}", task_id)
    assert task.model == "scripted:scripts/script.json"  # relative to the project, as its tools are
    assert ledger_entries(project) == ["a"]

    new_place = moved(project)
    assert ratchet_in(new_place, "approve", task_id).returncode == 0
    done = ratchet_in(new_place, "resume", task_id)

    assert done.returncode == 0, done.stderr
    assert ledger_entries(new_place) == ["a", "b"]
    assert [call["tool"] for call in tool_calls(new_place)] == ["record", "publish"]
    assert task_of(f"sqlite:///{new_place / 'ratchet.db'}", task_id).status is TaskStatus.COMPLETED


def test_a_missing_script_waits_and_resume_finishes_once_it_is_back(project: Path) -> None:
    (project / "tools.py").write_text(TOOLS)
    model = model_script(project, [*acts("a"), *acts("b")])
    queued = ratchet_in(project, "run", "keep the ledger", "-m", model, "--tools", "tools.py", "--detach")
    assert queued.returncode == 0, queued.stderr
    [task_id] = queued.stdout.split()
    (project / "script.json").rename(project / "script.json.away")

    done = ratchet_in(project, "resume", task_id)

    assert_one_line_error(
        done, f"task {task_id} waits for its code", f"no script file at {project.resolve() / 'script.json'}"
    )
    url = f"sqlite:///{project / 'ratchet.db'}"
    task = task_of(url, task_id)
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    assert "code_missing" in event_kinds(url, task_id)
    assert ledger_entries(project) == []

    (project / "script.json.away").rename(project / "script.json")
    again = ratchet_in(project, "resume", task_id)

    assert again.returncode == 0, again.stderr
    assert ledger_entries(project) == ["a", "b"]
    assert task_of(url, task_id).status is TaskStatus.COMPLETED


def test_tools_may_be_named_by_module(project: Path, tmp_path: Path) -> None:
    (project / "shop_tools.py").write_text(TOOLS)
    model = model_script(tmp_path / "model", [*acts("a"), *acts("b")])

    done = ratchet_in(project, "run", "keep the ledger", "-m", model, "--tools", "shop_tools", "--json")

    assert done.returncode == 0, done.stderr
    task_id = json.loads(done.stdout.splitlines()[-1])["task_id"]
    task = task_of(f"sqlite:///{project / 'ratchet.db'}", task_id)
    assert isinstance(task.inputs_params["agent"], dict)
    assert task.inputs_params["agent"]["tool_sources"] == ["shop_tools"]
    assert ledger_entries(project) == ["a", "b"]

    missing = ratchet_in(project, "run", "x", "-m", model, "--tools", "no_such_tools_module")
    assert_one_line_error(missing, "--tools", "no_such_tools_module")


def test_approve_edit_args_does_not_load_refused_code(
    url: str, project: Path, evil: tuple[Path, Path]
) -> None:
    """Checking edited arguments loads the task's tools: only as the trust admits, as a run would."""
    path, marker = evil

    async def write(store: Any) -> None:
        async with store.transaction() as tx:
            waiting = make_task("t1", workflow=f"{path}:flow", status="waiting", waiting_on="approval")
            await tx.create_task(waiting)
            await tx.request_approval(Approval(task_id="t1", seq=0, tool="send", arguments={"to": "a"}))

    with_store(url, write)

    done = ratchet_in(project, "approve", "t1", "--edit-args", '{"to": "b"}', "--store", url)

    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "approve ran the refused file"
    assert "could not be checked here" in done.stdout

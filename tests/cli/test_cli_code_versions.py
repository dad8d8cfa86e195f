"""Code versions: real `ratchet worker` programs of two versions on one store (SQLite and PostgreSQL).

A task records the version of the code it was made for (given by
``RATCHET_CODE_VERSION``, or, in the last test, the hash of the code on
disk, changed between the task and the worker). A worker of another version does not run it (no
tool call, an event naming both versions) and leaves it ``waiting(code)``;
a worker of its version, started after or already running, finishes it. A
worker that allows compatible versions runs it when its journal replays
there, and the task goes on under the worker's version.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ratchet.records import Event, Task, TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_command, ratchet_env
from .task_support import stop_with, stored_task, submit, wait_for_file, with_runtime, with_store

SCRIPT = Path(__file__).parent.parent / "helpers" / "failover_script.json"
UNTIL_DONE = 40.0  # seconds a worker has to end what it was given (a worker looks every 5 s)


def worker(cwd: Path, url: str, version: str | None, *args: str) -> subprocess.Popen[str]:
    """Start `ratchet worker` of code version `version` on `url` (None: that of the code in `cwd`)."""
    return subprocess.Popen(
        ratchet_command("worker", "--store", url, "--poll", "0.1", *args),
        cwd=cwd,
        env=ratchet_env(**({} if version is None else {"RATCHET_CODE_VERSION": version})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ended(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The output of a `--until-idle` worker once it ended, which it must do with 0."""
    try:
        out, err = process.communicate(timeout=UNTIL_DONE)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 0, (out, err)
    return out, err


def submit_as(
    monkeypatch: pytest.MonkeyPatch, version: str, url: str, workflow: str, **inputs: object
) -> str:
    """Submit a task of flows.py from this process, running code of version `version`."""
    with monkeypatch.context() as patched:
        patched.setenv("RATCHET_CODE_VERSION", version)
        return submit(url, workflow, **inputs)


def events(url: str, task_id: str) -> list[Event]:
    return with_store(url, lambda store: store.list_events(task_id))


def wait_until_ended(url: str, task_id: str, process: subprocess.Popen[str]) -> Task:
    deadline = time.monotonic() + UNTIL_DONE
    while not (task := stored_task(url, task_id)).status.is_terminal:
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"the worker ended ({process.returncode}) first: {out} {err}")
        assert time.monotonic() < deadline, f"task {task_id} is still {task.status_text}"
        time.sleep(0.1)
    return task


def test_a_worker_of_another_version_leaves_the_task_to_one_of_its_version(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "linger.log"
    task_id = submit_as(monkeypatch, "v-a", url, "lingers_then_shouts", marker=str(marker), seconds=0.0)

    ended(worker(tmp_path, url, "v-b", "--until-idle"))

    left = stored_task(url, task_id)
    assert (left.status, left.waiting_on, left.code_version) == (TaskStatus.WAITING, WaitReason.CODE, "v-a")
    assert not marker.exists()  # no tool ran
    said = [e for e in events(url, task_id) if e.kind == "code_version"]
    assert len(said) == 1
    assert "started on code version v-a and this worker runs version v-b" in said[0].message
    assert "start a worker of version v-a" in said[0].message
    assert "--compatible-versions" in said[0].message
    assert said[0].data["task_version"] == "v-a" and said[0].data["worker_version"] == "v-b"

    # Another worker of the other version, started later, leaves it as it is: nothing new is said.
    ended(worker(tmp_path, url, "v-b", "--until-idle"))
    assert len([e for e in events(url, task_id) if e.kind == "code_version"]) == 1

    ended(worker(tmp_path, url, "v-a", "--until-idle"))

    done = stored_task(url, task_id)
    assert (done.status, done.result, done.code_version) == (TaskStatus.COMPLETED, "DONE", "v-a")
    assert marker.read_text() == "began\n"


def test_a_worker_already_running_takes_up_a_task_of_its_version_another_worker_left(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = tmp_path / "busy.log"
    first = submit_as(monkeypatch, "v-a", url, "lingers", marker=str(busy), seconds=8.0)
    of_a = worker(tmp_path, url, "v-a", "--concurrency", "1")
    try:
        wait_for_file(busy, of_a)  # its one slot is taken: the next task goes to the other worker
        marker = tmp_path / "linger.log"
        task_id = submit_as(monkeypatch, "v-a", url, "lingers_then_shouts", marker=str(marker), seconds=0.0)
        ended(worker(tmp_path, url, "v-b", "--until-idle"))
        left = stored_task(url, task_id)
        assert left.waiting_on is WaitReason.CODE, left.status_text
        assert not marker.exists()

        done = wait_until_ended(url, task_id, of_a)
    finally:
        out, err = stop_with(of_a, signal.SIGTERM)

    assert (done.status, done.result, done.code_version) == (TaskStatus.COMPLETED, "DONE", "v-a")
    assert stored_task(url, first).status is TaskStatus.COMPLETED
    assert marker.read_text() == "began\n"
    assert of_a.returncode == 0, (out, err)


def test_a_worker_allowing_compatible_versions_runs_a_task_whose_journal_replays(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Passes once `replay_check_task` is built (branch i32-replay); on main it raises NotImplementedError,
    and the task waits, its event saying so."""
    marker = tmp_path / "linger.log"
    task_id = submit_as(monkeypatch, "v-a", url, "lingers_then_shouts", marker=str(marker), seconds=1.0)
    of_a = worker(tmp_path, url, "v-a", "--grace", "10")
    wait_for_file(marker, of_a)
    stop_with(of_a, signal.SIGTERM)  # it ends the linger call, journaled, and hands the task back
    assert stored_task(url, task_id).status is TaskStatus.RUNNING

    ended(worker(tmp_path, url, "v-b", "--until-idle", "--compatible-versions"))

    done = stored_task(url, task_id)
    said = [e.message for e in events(url, task_id) if e.kind.startswith("code_version")]
    assert done.status is TaskStatus.COMPLETED, said
    assert (done.result, done.code_version) == ("DONE", "v-b")
    assert marker.read_text() == "began\n"  # the journaled call was not made again
    [moved] = [e for e in events(url, task_id) if e.kind == "code_version_moved"]
    assert "started on version v-a and goes on under v-b" in moved.message
    assert (moved.data["from"], moved.data["to"]) == ("v-a", "v-b")


def test_tasks_are_listed_shown_and_served_with_their_code_version(
    run_ratchet: RunRatchet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    of_a = submit_as(monkeypatch, "v-a", url, "greet", who="ann")
    of_b = submit_as(monkeypatch, "v-b", url, "greet", who="bob")

    listed = run_ratchet("tasks", "--code-version", "v-a", "--json", "--store", url)
    shown = run_ratchet("show", of_b, "--store", url)
    as_json = run_ratchet("show", of_b, "--json", "--store", url)

    assert listed.returncode == 0, listed.stderr
    assert [t["task_id"] for t in json.loads(listed.stdout)] == [of_a]
    assert json.loads(listed.stdout)[0]["code_version"] == "v-a"
    assert shown.returncode == 0, shown.stderr
    assert any(
        line.split()[:3] == ["│", "code", "version"] and "v-b" in line for line in shown.stdout.splitlines()
    )
    assert json.loads(as_json.stdout)["task"]["code_version"] == "v-b"


@pytest.mark.parametrize("bad", ["has space", "-starts-with-a-dash", "x" * 65, "naïve"])
def test_a_code_version_that_is_none_is_one_line_and_exit_2(
    run_ratchet: RunRatchet, tmp_path: Path, bad: str
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"

    listed = run_ratchet("tasks", "--code-version", bad, "--store", url)
    working = run_ratchet("worker", "--until-idle", "--store", url, env=ratchet_env(RATCHET_CODE_VERSION=bad))
    submitted = run_ratchet(
        "submit",
        "x",
        "--model",
        f"scripted:{SCRIPT}",
        "--store",
        url,
        env=ratchet_env(RATCHET_CODE_VERSION=bad),
    )

    assert_one_line_error(listed, "--code-version", "is not a code version")
    assert_one_line_error(working, "RATCHET_CODE_VERSION", "is not a code version")
    assert_one_line_error(submitted, "RATCHET_CODE_VERSION", "is not a code version")
    assert (
        not (tmp_path / "ratchet.db").exists() or with_store(url, lambda store: store.count_task_rows()) == 0
    )


APP = """
import ratchet


@ratchet.workflow
async def hello(ctx: ratchet.Context) -> str:
    return {said!r}
"""


def test_without_the_variable_the_version_is_the_code_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RATCHET_CODE_VERSION", raising=False)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    app = tmp_path / "app.py"
    app.write_text(APP.format(said="first"))
    task_id = with_runtime(url, lambda runtime: runtime.submit(f"{app}:hello", queue=True))
    made = stored_task(url, task_id).code_version
    assert made is not None

    app.write_text(APP.format(said="changed"))  # deployed: other code on disk
    ended(worker(tmp_path, url, None, "--until-idle"))
    [said] = [e for e in events(url, task_id) if e.kind == "code_version"]
    changed = said.data["worker_version"]
    assert isinstance(changed, str) and changed != made
    assert f"started on code version {made} and this worker runs version {changed}" in said.message

    app.write_text(APP.format(said="first"))  # rolled back: the code it started on
    ended(worker(tmp_path, url, None, "--until-idle"))
    done = stored_task(url, task_id)
    assert (done.status, done.result, done.code_version) == (TaskStatus.COMPLETED, "first", made)


def test_resume_runs_a_task_only_on_the_version_it_started_on(
    run_ratchet: RunRatchet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = submit_as(monkeypatch, "v-a", url, "greet", who="ann")

    elsewhere = run_ratchet("resume", task_id, "--store", url, env=ratchet_env(RATCHET_CODE_VERSION="v-b"))
    here = run_ratchet("resume", task_id, "--store", url, env=ratchet_env(RATCHET_CODE_VERSION="v-a"))

    line = assert_one_line_error(
        elsewhere, f"task {task_id} waits for its code", "start a worker of version v-a"
    )
    assert "put it in place" not in line
    assert here.returncode == 0, here.stderr
    done = stored_task(url, task_id)
    assert (done.status, done.code_version) == (TaskStatus.COMPLETED, "v-a")


def test_resume_with_compatible_versions_runs_a_task_of_another_version_whose_journal_replays(
    run_ratchet: RunRatchet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person who resumes a task here on new code says so with the flag; the task moves to it."""
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = submit_as(monkeypatch, "v-a", url, "greet", who="ann")

    moved = run_ratchet(
        "resume",
        task_id,
        "--compatible-versions",
        "--store",
        url,
        env=ratchet_env(RATCHET_CODE_VERSION="v-b"),
    )

    assert moved.returncode == 0, moved.stderr
    done = stored_task(url, task_id)
    assert (done.status, done.code_version) == (TaskStatus.COMPLETED, "v-b")
    assert any(e.kind == "code_version_moved" for e in events(url, task_id))


TWO_CALLS = """
import asyncio
from pathlib import Path

import ratchet


@ratchet.tool(idempotent=True)
async def mark(path: str, label: str, seconds: float) -> str:
    with Path(path).open("a") as out:
        out.write(label + "\\n")
    await asyncio.sleep(seconds)
    return label


@ratchet.tool(idempotent=True)
async def other(path: str, label: str, seconds: float) -> str:
    return await mark.fn(path, label, seconds)


@ratchet.workflow(tools=[mark, other])
async def two(ctx: ratchet.Context, path: str) -> list[str]:
    first = await ctx.call_tool({first!r}, {{"path": path, "label": "first", "seconds": 1.0}})
    second = await ctx.call_tool("mark", {{"path": path, "label": "second", "seconds": 0.0}})
    return [str(first), str(second)]
"""


def test_a_worker_allowing_compatible_versions_leaves_a_task_whose_journal_does_not_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event names the divergence once `replay_check_task` is built (branch i32-replay); on main the
    task waits all the same, the check being unmade (NotImplementedError)."""
    monkeypatch.delenv("RATCHET_CODE_VERSION", raising=False)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    app, marks = tmp_path / "app.py", tmp_path / "marks.log"
    app.write_text(TWO_CALLS.format(first="mark"))
    task_id = with_runtime(url, lambda runtime: runtime.submit(f"{app}:two", {"path": str(marks)}))
    first = worker(tmp_path, url, None, "--grace", "10")
    wait_for_file(marks, first)
    stop_with(first, signal.SIGTERM)  # the first call ends, journaled; the task is handed back

    app.write_text(TWO_CALLS.format(first="other"))  # the new code makes another call first
    ended(worker(tmp_path, url, None, "--until-idle", "--compatible-versions"))

    left = stored_task(url, task_id)
    assert left.status_text == "waiting(code)"
    assert marks.read_text() == "first\n"  # nothing ran under the new code
    [said] = [e for e in events(url, task_id) if e.kind == "code_version"]
    assert "this worker allows compatible versions, but" in said.message
    assert "its journal does not replay here: at seq 0 it recorded tool mark" in said.message, said.message
    assert "or make this code replay it: " in said.message
    assert "--compatible-versions" not in said.message  # it allows them: no use saying so


def test_a_worker_allows_compatible_versions_from_its_flag_or_its_config_file(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    plain = run_ratchet("worker", "--until-idle", "--store", url, env=ratchet_env(RATCHET_CODE_VERSION="v-a"))
    flagged = run_ratchet("worker", "--until-idle", "--compatible-versions", "--store", url)
    (tmp_path / "ratchet.toml").write_text("[worker]\ncompatible_versions = true\n")
    from_file = run_ratchet("worker", "--until-idle", "--store", url)

    for done in (plain, flagged, from_file):
        assert done.returncode == 0, done.stderr
    assert ", code version v-a;" in plain.stdout
    assert "compatible" not in plain.stdout
    assert ", runs tasks of compatible code versions;" in flagged.stdout
    assert ", runs tasks of compatible code versions;" in from_file.stdout

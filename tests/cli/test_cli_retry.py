"""`ratchet retry`, and `ratchet resume` of a task that already completed, run as the real program."""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus

from ..agent.support import GUARD, INSTRUCTION, make_agent
from ..helpers.cli import RunRatchet, assert_one_line_error
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, say, verdict
from .task_support import run_here, submit, with_store

STEPS = ("restart X", "ship v1", "ship v2")
ACT = [
    calls(("restart_service", {"service": "X"})),
    say("X restarted"),
    calls(("deploy", {"version": "v1"})),
    say("v1 is live"),
    calls(("deploy", {"version": "v2"})),
    say("v2 is live"),
]
REFUSED: dict[str, Any] = {"error": {"status": 401}}


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RATCHET_HOME under the test's directory, and the agent's test tools importable, for the programs
    started (they inherit the environment)."""
    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return tmp_path / "home"


def _failed_at_step_3(url: str, script: Callable[[dict[str, Any]], str]) -> tuple[str, str]:
    """An agent task whose model refused at step 3; returns its id and its model string."""
    model = script({"plan": [plan(*STEPS)], "act": [*ACT[:4], REFUSED], "verify": [verdict(True)] * 3})

    async def run() -> str:
        async with Runtime(url) as rt:
            task = await asyncio.wait_for(rt.run(make_agent(model), instruction=INSTRUCTION), GUARD)
            assert task.status is TaskStatus.FAILED
            return task.id

    return asyncio.run(run()), model


def _fix(model: str) -> None:
    """The provider answers again: the same script file now gives step 3 its turns."""
    content = {"plan": [plan(*STEPS)], "act": ACT, "verify": [verdict(True)] * 3}
    Path(model.removeprefix("scripted:")).write_text(json.dumps(content), encoding="utf-8")


def test_retry_of_a_task_that_failed_at_its_third_step_runs_only_from_there(
    run_ratchet: RunRatchet, url: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    failed, model = _failed_at_step_3(url, script)
    _fix(model)

    done = run_ratchet("retry", failed, "--store", url)

    assert done.returncode == 0, done.stderr
    retry = f"{failed}-retry1"
    assert f"retrying task {failed} as new task {retry}" in done.stdout
    assert f"task {retry} completed" in done.stdout
    keys = Counter((tool, key.rpartition(":")[0]) for (tool, key) in tools_ledger.invocations().elements())
    assert keys == Counter({("restart_service", failed): 1, ("deploy", failed): 1, ("deploy", retry): 1})
    assert with_store(url, lambda store: store.get_task(failed)).status is TaskStatus.FAILED


def test_retry_json_ends_with_the_new_tasks_outcome_and_queue_only_makes_it(
    run_ratchet: RunRatchet, url: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    failed, model = _failed_at_step_3(url, script)
    _fix(model)

    queued = run_ratchet("retry", failed, "--from-step", "3", "--queue", "--json", "--store", url)
    assert queued.returncode == 0, queued.stderr
    made = json.loads(queued.stdout)
    assert made == {"task_id": f"{failed}-retry1", "retry_of": failed}
    assert with_store(url, lambda store: store.get_task(made["task_id"])).status is TaskStatus.QUEUED

    done = run_ratchet("retry", failed, "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.splitlines()[-1])
    assert (shown["task_id"], shown["status"]) == (f"{failed}-retry2", "completed")


@pytest.mark.parametrize("as_json", [False, True])
def test_resume_of_a_completed_task_prints_its_outcome_and_exits_0(
    run_ratchet: RunRatchet, url: str, as_json: bool
) -> None:
    task = run_here(url, "greet", who="cy")

    done = run_ratchet("resume", task.id, "--store", url, *(["--json"] if as_json else []))

    assert done.returncode == 0, done.stderr
    if as_json:
        shown = json.loads(done.stdout.splitlines()[-1])
        assert (shown["status"], shown["result"]) == ("completed", {"greeting": "HELLO CY"})
    else:
        assert f"task {task.id} completed" in done.stdout
        assert '{"greeting": "HELLO CY"}' in done.stdout


def test_what_cannot_be_retried_is_one_line_and_exit_2(
    run_ratchet: RunRatchet, tmp_path: Path, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    failed, _ = _failed_at_step_3(url, script)
    completed = run_here(url, "greet", who="di")
    queued = submit(url, "greet", who="ed")

    assert_one_line_error(run_ratchet("retry", "nope", "--store", url), "'nope'")
    assert_one_line_error(run_ratchet("retry", queued, "--store", url), queued, "not failed or cancelled")
    assert_one_line_error(run_ratchet("retry", completed.id, "--store", url), completed.id, "completed")
    assert_one_line_error(
        run_ratchet("retry", failed, "--from-step", "4", "--store", url), "give a step from 1 to 3"
    )
    assert_one_line_error(run_ratchet("resume", failed, "--store", url), f"ratchet retry {failed}")

"""Validate before resume from the command line: `ratchet worker` sets a stale task aside, and the
agent's checkpoint policy and step timeout given to `ratchet run` and `ratchet submit`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ratchet.records import TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error
from .run_support import TOOLS, acts, script
from .task_support import SIGNAL_TIMEOUT, start_ratchet, with_store


@pytest.fixture
def tools(tmp_path: Path) -> str:
    (tmp_path / "tools.py").write_text(TOOLS)
    return "tools.py"


def _tool_calls(directory: Path) -> list[dict[str, str]]:
    path = directory / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _submit(run_ratchet: RunRatchet, url: str, model: str, tools: str, *options: str) -> str:
    done = run_ratchet(
        "submit", "keep the ledger", "--model", model, "--tools", tools, "--json", *options, "--store", url
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["task_id"])


def test_the_worker_sets_aside_a_stale_task_with_a_clear_event(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    slow_b = acts("b", tool="record_slowly", seconds=2)
    model = script(tmp_path, act=[*acts("a"), *slow_b])
    task_id = _submit(run_ratchet, url, model, tools, "--checkpoint-max-age", "1s")
    # A worker takes the task, finishes step a (checkpoint 1) and dies inside step b.
    doomed = start_ratchet(tmp_path, "worker", "--poll", "0.05", "--lease-ttl", "1", "--store", url)
    deadline = time.monotonic() + SIGNAL_TIMEOUT
    while not any(call["entry"] == "b" for call in _tool_calls(tmp_path)):
        assert doomed.poll() is None and time.monotonic() < deadline, doomed.communicate()
        time.sleep(0.02)
    doomed.kill()
    doomed.communicate()
    time.sleep(1.5)  # its lease expires; its newest checkpoint is older than 1 s

    done = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"task {task_id}: set aside, not resumed: its newest checkpoint (number 1) is " in done.stderr
    task = with_store(url, lambda store: store.get_task(task_id))
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.STALE)
    assert [c["entry"] for c in _tool_calls(tmp_path)] == ["a", "b"], "the stale task ran on"
    shown = run_ratchet("show", task_id, "--store", url)
    assert "waiting(stale)" in shown.stdout
    assert "Set aside: its newest checkpoint (number 1) is" in shown.stdout
    events = run_ratchet("events", task_id, "--json", "--store", url)
    [stale] = [e for e in map(json.loads, events.stdout.splitlines()) if e["kind"] == "task_stale"]
    assert "more than the 1 s its checkpoint policy trusts (max_age)" in stale["message"]
    assert stale["message"].endswith(f"then `ratchet resume {task_id} --force`")

    again = run_ratchet("worker", "--until-idle", "--poll", "0.05", "--store", url)  # it stays aside
    refused = run_ratchet("resume", task_id, "--store", url)

    assert again.returncode == 0 and "set aside" not in again.stderr
    assert_one_line_error(refused, f"task {task_id} is set aside: its newest checkpoint", "--force")
    forced = run_ratchet("resume", task_id, "--force", "--json", "--store", url)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout.splitlines()[-1])["status"] == "completed"


def test_submit_records_the_agents_checkpoint_policy_and_step_timeout(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=acts("a"))
    options = ["--checkpoint-strategy", "on_state_change", "--keep-checkpoints", "3"]
    options += ["--checkpoint-max-age", "2h", "--step-timeout", "90s"]

    task_id = _submit(run_ratchet, url, model, tools, *options)

    spec = with_store(url, lambda store: store.get_task(task_id)).inputs_params["agent"]
    assert isinstance(spec, dict)
    assert spec["checkpoint"] == {"strategy": "on_state_change", "keep": 3, "max_age": 7200.0}
    assert spec["step_timeout"] == 90.0


def test_run_keeps_only_the_checkpoints_it_is_told_to(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b")])

    done = run_ratchet(
        "run", "keep the ledger", "--model", model, "--tools", tools, "--keep-checkpoints", "1",
        "--step-timeout", "1m", "--json", "--store", url,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    task_id = json.loads(done.stdout.splitlines()[-1])["task_id"]
    kept = with_store(url, lambda store: store.list_checkpoints(task_id))
    assert [c.number for c in kept] == [2]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--checkpoint-max-age", "soon"], "--checkpoint-max-age: 'soon' is not a duration"),
        (["--checkpoint-max-age", "0s"], "--checkpoint-max-age: '0s' leaves no time"),
        (["--step-timeout", "0"], "--step-timeout: '0' leaves no time"),
        (["--step-timeout", "100000000d"], "--step-timeout: '100000000d' is too long"),
        (["--keep-checkpoints", "0"], "--keep-checkpoints"),
        (["--checkpoint-strategy", "sometimes"], "--checkpoint-strategy"),
    ],
)
@pytest.mark.parametrize("command", ["run", "submit"])
def test_bad_checkpoint_and_timeout_options_are_one_line_and_store_nothing(
    run_ratchet: RunRatchet, tmp_path: Path, tools: str, command: str, args: list[str], expected: str
) -> None:
    model = script(tmp_path, act=acts("a"))
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"

    done = run_ratchet(command, "keep the ledger", "--model", model, "--tools", tools, *args, "--store", url)

    assert_one_line_error(done, expected)
    assert not (tmp_path / "ratchet.db").exists()

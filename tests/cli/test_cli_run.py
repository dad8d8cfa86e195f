"""`ratchet run` and `ratchet cancel`, run as real programs with scripted models on real SQLite.

Each test writes its model's script and a tools file into its own directory;
every effect of a tool is one ledger line, written once per idempotency key,
and every call of a tool is logged, so a test sees both what happened and how
often a tool ran.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ratchet.records import TaskStatus

from ..helpers.cli import LineReader, RunRatchet, assert_one_line_error
from .run_support import TOOLS, acts, script
from .task_support import SIGNAL_TIMEOUT, start_ratchet, stop_with, with_store

RESULT_KEYS = {"task_id", "status", "waiting_on", "result", "error", "steps", "usage"}


# --------------------------------------------------------------------------- files


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


@pytest.fixture
def tools(tmp_path: Path) -> str:
    (tmp_path / "tools.py").write_text(TOOLS)
    return "tools.py"


def ledger(directory: Path) -> list[str]:
    """The entries the tools recorded, in order (each effect once per idempotency key)."""
    path = directory / "ledger.jsonl"
    return [json.loads(line)["entry"] for line in path.read_text().splitlines()] if path.exists() else []


def calls(directory: Path) -> list[dict[str, str]]:
    """Every call of a tool, repeats included."""
    path = directory / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON object on the last line of stdout."""
    assert "Traceback" not in done.stderr
    shown: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert set(shown) == RESULT_KEYS
    return shown


def created_task(reader: LineReader) -> str:
    """The task id from the line `run` prints once it created the task."""
    reader.wait_for(" created; it runs here", SIGNAL_TIMEOUT)
    [line] = [line for line in reader.lines if " created; it runs here" in line]
    return line.split()[1]


def wait_until(condition: Any, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + SIGNAL_TIMEOUT
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.02)


# --------------------------------------------------------------------------- running to the end


def test_run_carries_out_a_plan_and_ends_with_json(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b")])

    done = run_ratchet("run", "keep the ledger", "--model", model, "--tools", tools, "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    shown = result(done)
    assert shown["status"] == "completed"
    assert shown["result"] == "recorded b"
    assert shown["error"] is None
    assert shown["steps"] == [
        {"step": 1, "name": "a", "status": "completed", "failure_message": None},
        {"step": 2, "name": "b", "status": "completed", "failure_message": None},
    ]
    assert shown["usage"]["steps"] == 2
    assert shown["usage"]["llm_tokens"] > 0
    assert done.stdout.count("\n") == 1  # --json: no progress, only the result
    assert ledger(tmp_path) == ["a", "b"]
    task = with_store(url, lambda store: store.get_task(shown["task_id"]))
    assert task.status is TaskStatus.COMPLETED
    assert task.model == "scripted:script.json"  # relative to the project root, as a tools file is


def test_run_shows_steps_tool_calls_and_tokens_as_lines(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b")])

    done = run_ratchet(
        "run",
        "keep the ledger",
        "-m",
        model,
        "--tools",
        tools,
        "--max-tokens",
        "50000",
        "--store",
        url,
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    task_id = lines[0].split()[1]
    assert lines[0].startswith(f"task {task_id} created; it runs here")
    assert any("planned 2 steps" in line for line in lines)  # the agent's events, as they come
    # Successful write-local calls raise no event: these lines come from the journal.
    calls_shown = [line.split("  tool     ")[-1] for line in lines if "  tool     " in line]
    assert [re.sub(r"^#\d+ ", "", line) for line in calls_shown] == [
        "record(entry='a'): ok",
        "record(entry='b'): ok",
    ]
    assert f"task {task_id} completed" in lines
    assert lines[-1].startswith("used: ")
    assert "LLM tokens of 50,000 · 2 of 2 steps done · 2 tool calls" in lines[-1]


def test_detach_queues_the_task_and_resume_runs_it(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b")])

    queued = run_ratchet("run", "keep the ledger", "-m", model, "--tools", tools, "--detach", "--store", url)

    assert queued.returncode == 0, queued.stderr
    [task_id] = queued.stdout.split()
    assert f"ratchet resume --store {url} {task_id}" in queued.stderr
    assert ledger(tmp_path) == []
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.QUEUED

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, done.stderr
    assert ledger(tmp_path) == ["a", "b"]


# --------------------------------------------------------------------------- bad input


NOT_TOOLS = "def helper():\n    return 1\n"
BROKEN = "import ratchet\nraise RuntimeError('no config')\n"
SHADOWS = "import ratchet\n\n@ratchet.tool\ndef read_file(path: str) -> str:\n    return path\n"
SHADOWS_A_CONTROL = "import ratchet\n\n@ratchet.tool\ndef replan(reason: str) -> str:\n    return reason\n"


@pytest.mark.parametrize(
    ("files", "args", "expected"),
    [
        ({}, ["--model", "gpt:4"], "unknown model 'gpt:4'"),
        ({}, ["--model", "scripted:nowhere.json"], "no script file"),
        ({}, ["--tools", "missing.py"], "--tools: no file at"),
        ({"helpers.py": NOT_TOOLS}, ["--tools", "helpers.py"], "helpers.py defines no tool"),
        ({"broken.py": BROKEN}, ["--tools", "broken.py"], "RuntimeError: no config"),
        ({"mine.py": SHADOWS}, ["--tools", "mine.py"], "'read_file', the name of a built-in tool"),
        ({"mine.py": SHADOWS_A_CONTROL}, ["--tools", "mine.py"], "'replan', the name of a built-in tool"),
        ({}, ["--deadline", "soon"], "--deadline: 'soon' is not a duration"),
        ({}, ["--deadline", "0s"], "--deadline: '0s' leaves no time"),
        ({}, ["--max-steps", "0"], "--max-steps"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(
    run_ratchet: RunRatchet,
    url: str,
    tools: str,
    tmp_path: Path,
    files: dict[str, str],
    args: list[str],
    expected: str,
) -> None:
    model = script(tmp_path, act=acts("a"))
    for name, text in files.items():
        (tmp_path / name).write_text(text)

    done = run_ratchet("run", "keep the ledger", "--model", model, "--tools", tools, *args, "--store", url)

    assert_one_line_error(done, expected)
    assert not (tmp_path / "ratchet.db").exists()


def test_detach_into_a_memory_store_is_bad_input(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    model = script(tmp_path, act=acts("a"))

    done = run_ratchet("run", "keep the ledger", "--model", model, "--detach", "--store", "memory://")

    assert_one_line_error(done, "--detach with a memory:// store")


def test_an_empty_instruction_is_bad_input(run_ratchet: RunRatchet, url: str, tmp_path: Path) -> None:
    model = script(tmp_path, act=acts("a"))

    assert_one_line_error(run_ratchet("run", "  ", "--model", model, "--store", url), "instruction is empty")


# --------------------------------------------------------------------------- limits


def test_a_used_up_step_budget_fails_the_task_naming_the_limit(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b")])

    done = run_ratchet(
        "run",
        "keep the ledger",
        "-m",
        model,
        "--tools",
        tools,
        "--max-steps",
        "1",
        "--json",
        "--store",
        url,
    )

    assert done.returncode == 1, done.stderr
    shown = result(done)
    assert shown["status"] == "failed"
    assert "budget exceeded (max_steps: 2 of 1)" in shown["error"]
    assert shown["steps"][0] == {"step": 1, "name": "a", "status": "completed", "failure_message": None}
    assert shown["usage"]["steps"] == 1
    assert ledger(tmp_path) == ["a"]


def test_a_deadline_cuts_a_slow_tool_short_and_fails_the_task(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, steps=("a",), act=acts("a", tool="record_slowly", seconds=300))
    began = time.monotonic()

    done = run_ratchet(
        "run",
        "keep the ledger",
        "-m",
        model,
        "--tools",
        tools,
        "--deadline",
        "1s",
        "--json",
        "--store",
        url,
    )

    assert done.returncode == 1, done.stderr
    # Not a speed target: far short of the tool's 300 s however busy the machine, so the deadline cut it.
    assert time.monotonic() - began < 60
    shown = result(done)
    assert shown["status"] == "failed"
    assert "deadline exceeded" in shown["error"]


# --------------------------------------------------------------------------- cancel


def test_cancel_ends_a_detached_task_for_good(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b")])
    task_id = run_ratchet(
        "run", "keep the ledger", "-m", model, "--tools", tools, "--detach", "--store", url
    ).stdout.strip()

    done = run_ratchet("cancel", task_id, "--reason", "not needed after all", "--store", url)

    assert done.returncode == 0, done.stderr
    assert f"task {task_id} cancelled (it was queued): not needed after all" in done.stdout
    task = with_store(url, lambda store: store.get_task(task_id))
    assert (task.status, task.error) == (TaskStatus.CANCELLED, "not needed after all")
    assert with_store(url, lambda store: store.list_triggers(task_id)) == []
    assert_one_line_error(run_ratchet("resume", task_id, "--store", url), "already cancelled")
    assert_one_line_error(run_ratchet("cancel", task_id, "--store", url), "already cancelled")
    assert ledger(tmp_path) == []


def test_cancel_stops_a_running_run_at_once(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a", delay=30), *acts("b")])
    process = start_ratchet(tmp_path, "run", "keep the ledger", "-m", model, "--tools", tools, "--store", url)
    reader = LineReader(process.stdout)  # type: ignore[arg-type]
    task_id = created_task(reader)
    reader.wait_for("record(entry='a'): ok", SIGNAL_TIMEOUT)  # then the model takes 30 s

    done = run_ratchet("cancel", task_id, "--store", url)
    stopped_at = time.monotonic()

    assert done.returncode == 0, done.stderr
    assert "(it was running)" in done.stdout
    assert "steps cancelled: 2 (a, b)" in done.stdout
    assert "was running it; it stops at its next write" in done.stdout
    assert process.wait(SIGNAL_TIMEOUT) == 1  # it noticed, and did not wait for its heartbeat
    assert time.monotonic() - stopped_at < 5
    out = "".join(reader.rest(SIGNAL_TIMEOUT))
    assert f"task {task_id} cancelled" in out
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.CANCELLED
    assert ledger(tmp_path) == ["a"]


def test_cancel_of_an_unknown_task_is_bad_input(run_ratchet: RunRatchet, url: str) -> None:
    assert_one_line_error(run_ratchet("cancel", "no-such-task", "--store", url), "no task with id")


# --------------------------------------------------------------------------- stopped midway


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_a_signal_stops_the_run_and_resume_finishes_it_without_repeats(
    run_ratchet: RunRatchet,
    url: str,
    tools: str,
    tmp_path: Path,
    signum: signal.Signals,
    code: int,
    said: str,
) -> None:
    model = script(tmp_path, act=[*acts("a", delay=2), *acts("b")])
    process = start_ratchet(tmp_path, "run", "keep the ledger", "-m", model, "--tools", tools, "--store", url)
    reader = LineReader(process.stdout)  # type: ignore[arg-type]
    task_id = created_task(reader)
    reader.wait_for("record(entry='a'): ok", SIGNAL_TIMEOUT)  # then the model takes 2 s

    _, err = stop_with(process, signum)

    assert process.returncode == code, err
    assert "Traceback" not in err
    assert err.startswith(f"{said}: task {task_id} stopped")
    assert f"continue it with `ratchet resume --store {url} {task_id}`" in err
    lease = with_store(url, lambda store: store.get_lease(task_id))
    assert lease is not None and lease.released
    assert with_store(url, lambda store: store.get_task(task_id)).status is TaskStatus.RUNNING

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, done.stderr
    assert ledger(tmp_path) == ["a", "b"]
    assert [call["entry"] for call in calls(tmp_path)] == ["a", "b"]  # nothing ran twice


def test_a_killed_run_is_resumed_and_the_tool_in_flight_has_no_second_effect(
    run_ratchet: RunRatchet, url: str, tools: str, tmp_path: Path
) -> None:
    model = script(tmp_path, act=[*acts("a"), *acts("b", tool="record_slowly", seconds=2)])
    process = start_ratchet(tmp_path, "run", "keep the ledger", "-m", model, "--tools", tools, "--store", url)
    reader = LineReader(process.stdout)  # type: ignore[arg-type]
    task_id = created_task(reader)
    wait_until(lambda: ledger(tmp_path) == ["a", "b"], process)  # record_slowly is in its 2 s

    process.kill()
    process.wait(SIGNAL_TIMEOUT)

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, done.stderr
    assert ledger(tmp_path) == ["a", "b"]
    slow = [call for call in calls(tmp_path) if call["tool"] == "record_slowly"]
    assert len(slow) == 2 and slow[0]["key"] == slow[1]["key"]  # run again, with the same key

"""Numbers, durations, crons and instructions out of bounds: one `error:` line, exit 2, nothing stored."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ratchet.cli.submit import parse_start_time
from ratchet.errors import InputError
from ratchet.limits import MAX_INSTRUCTION_BYTES
from ratchet.policy import MAX_DURATION, parse_duration

from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_command, ratchet_env
from .task_support import with_store

SCRIPT = Path(__file__).resolve().parents[1] / "helpers" / "failover_script.json"
MODEL = f"scripted:{SCRIPT}"
HUGE = "9" * 26
AGENT = ["--model", MODEL]


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["resolve", "t-1", "--retry", "--op", HUGE], "--op"),
        (["fork", "t-1", "--checkpoint", HUGE], "--checkpoint"),
        (["gc", "--keep", HUGE], "--keep"),
        (["gc", "--older-than", "100000000d"], "--older-than: '100000000d' is too long"),
        (["worker", "--concurrency", "99999999999999999999"], "--concurrency"),
        (["worker", "--lease-ttl", "1e300"], "--lease-ttl"),
        (["worker", "--lease-ttl", "nan"], "--lease-ttl"),
        (["worker", "--poll", "inf"], "--poll"),
        (["worker", "--grace", "1e300"], "--grace"),
        (["resume", "t-1", "--lease-ttl", "1e300"], "--lease-ttl"),
        (["chat", "--model", MODEL, "--max-model-calls", HUGE], "--max-model-calls"),
        (["submit", "hi", *AGENT, "--deadline", "100000000d"], "--deadline: '100000000d' is too long"),
        (["run", "hi", *AGENT, "--deadline", "9" * 400 + "s"], "--deadline"),
        (["submit", "hi", *AGENT, "--at", "99999999999999d"], "--at: '99999999999999d' is too long"),
        (["submit", "hi", *AGENT, "--at", "9999-12-31T23:00:00-05:00"], "out of the range of dates"),
        (["submit", "hi", *AGENT, "--max-steps", HUGE], "--max-steps"),
        (["run", "hi", *AGENT, "--max-tokens", HUGE], "--max-tokens"),
        (["run", "hi", *AGENT, "--max-cost", "nan"], "--max-cost"),
        (["submit", "hi", *AGENT, "--max-cost", "0"], "--max-cost"),
        (["run", "hi", *AGENT, "--max-tool-calls", HUGE], "--max-tool-calls"),
        (["submit", "hi", *AGENT, "--max-tool-calls", "0"], "--max-tool-calls"),
        (["submit", "hi", *AGENT, "--max-instruction-bytes", HUGE], "--max-instruction-bytes"),
    ],
)
def test_a_number_out_of_bounds_is_one_line_and_nothing_is_created(
    run_ratchet: RunRatchet, tmp_path: Path, args: list[str], expected: str
) -> None:
    done = run_ratchet(*args)

    assert_one_line_error(done, expected)
    assert _files(tmp_path) == []


def test_a_cron_that_never_fires_is_one_line(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    done = run_ratchet("submit", "hi", *AGENT, "--every", "0 0 30 2 *")

    assert_one_line_error(done, "'0 0 30 2 *' never matches")
    assert _files(tmp_path) == []


def test_a_cron_that_fires_only_in_leap_years_is_a_schedule(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    done = run_ratchet("submit", "hi", *AGENT, "--every", "0 0 29 2 *", "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["next_due"][5:10] == "02-29"


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "bad \udcff", *AGENT],
        ["run", "bad \udcff", *AGENT],
        ["submit", "hi", *AGENT, "--instructions", "bad \udcff"],
        ["answer", "t-1", "bad \udcff"],
        ["cancel", "t-1", "--reason", "bad \udcff"],
    ],
)
def test_an_argument_that_is_not_utf8_is_one_line(
    run_ratchet: RunRatchet, tmp_path: Path, args: list[str]
) -> None:
    done = run_ratchet(*args)  # the string's lone surrogate reaches the program as the byte 0xff

    assert_one_line_error(done, "not valid UTF-8", "0xff")
    assert _files(tmp_path) == []


def _with_stdin(
    tmp_path: Path, data: bytes, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ratchet_command(*args),
        cwd=tmp_path,
        env=env or ratchet_env(),
        input=data,
        capture_output=True,
        timeout=60,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


@pytest.mark.parametrize("command", ["submit", "run"])
def test_an_instruction_on_stdin_that_is_not_utf8_is_one_line(tmp_path: Path, command: str) -> None:
    done = _with_stdin(tmp_path, b"bad \xff", command, "-", *AGENT)

    assert_one_line_error(done, "standard input is not valid UTF-8", "0xff", "byte 5")
    assert _files(tmp_path) == []


@pytest.mark.parametrize("command", ["submit", "run"])
def test_an_instruction_over_the_limit_is_refused_before_anything_is_stored(
    tmp_path: Path, command: str
) -> None:
    # Fewer characters than the limit, more bytes: the limit counts bytes of UTF-8.
    text = "é" * (MAX_INSTRUCTION_BYTES // 2 + 1)
    done = _with_stdin(tmp_path, text.encode(), command, "-", *AGENT)

    assert_one_line_error(done, f"limit of {MAX_INSTRUCTION_BYTES} bytes", "--max-instruction-bytes")
    assert _files(tmp_path) == []


def test_the_instruction_limit_is_an_option_and_an_environment_variable(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    refused = run_ratchet("submit", "x" * 101, *AGENT, "--max-instruction-bytes", "100")
    assert_one_line_error(refused, "the instruction is 101 bytes, more than the limit of 100 bytes")
    from_env = run_ratchet("submit", "x" * 101, *AGENT, env=ratchet_env(RATCHET_MAX_INSTRUCTION_BYTES="100"))
    assert_one_line_error(from_env, "more than the limit of 100 bytes")
    assert _files(tmp_path) == []


def test_a_large_instruction_within_a_raised_limit_is_queued_whole(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    text = "é" * (MAX_INSTRUCTION_BYTES // 2 + 1)
    limit = str(MAX_INSTRUCTION_BYTES * 2)
    done = _with_stdin(
        tmp_path,
        text.encode() + b"\n",
        "submit",
        "-",
        *AGENT,
        "--max-instruction-bytes",
        limit,
        "--store",
        url,
    )

    assert done.returncode == 0, done.stderr
    task = with_store(url, lambda store: store.get_task(done.stdout.strip()))
    assert task.instruction == text  # the final newline of standard input is not part of it


def test_the_tool_call_limit_is_kept_in_the_task(tmp_path: Path, run_ratchet: RunRatchet) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    done = run_ratchet("submit", "hi", *AGENT, "--max-tool-calls", "5", "--store", url)

    assert done.returncode == 0, done.stderr
    task = with_store(url, lambda store: store.get_task(done.stdout.strip()))
    assert isinstance(task.inputs_params["agent"], dict)
    assert task.inputs_params["agent"]["max_tool_calls_per_answer"] == 5


def test_durations_are_bounded_in_one_place() -> None:
    assert parse_duration("36500d") == MAX_DURATION
    with pytest.raises(InputError, match="at most 36500d"):
        parse_duration("36501d")
    with pytest.raises(InputError, match="--at: '99999999999999d' is too long"):
        parse_start_time("99999999999999d")
    with pytest.raises(InputError, match="neither a time"):
        parse_start_time("tomorrow")

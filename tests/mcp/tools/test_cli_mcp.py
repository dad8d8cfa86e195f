"""`ratchet run/submit --mcp ... --mcp-risk TOOL=LEVEL`: checked before anything is stored, then used."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet.trust.code import ALLOW_CODE_ENV

from ...helpers.cli import RunRatchet, assert_one_line_error, ratchet_env, ratchet_runner
from .support import SERVER, log_lines, one_call_script, stdio_command

EXIT_WAITS_ON_PERSON = 3


@pytest.fixture
def run_ratchet(tmp_path: Path) -> RunRatchet:
    """`ratchet ARGS...` run in tmp_path, a project root the test server is not under."""
    return ratchet_runner(tmp_path)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--mcp", "no-such-mcp-server --stdio"], "no command 'no-such-mcp-server' here"),
        (
            ["--mcp", "ftp://example.org/mcp"],
            "--mcp: MCP server 'ftp://example.org/mcp': 'ftp://example.org/mcp' is not",
        ),
        (["--mcp", "http://127.0.0.1:99999/mcp"], "has no valid port"),
        (["--mcp", "srv 'unclosed"], "does not parse"),
        (
            ["--mcp", "http://127.0.0.1:8000/mcp", "--mcp-risk", "lookup=harmless"],
            "--mcp-risk 'lookup=harmless'",
        ),
        (["--mcp-risk", "lookup=read_only"], "give the server with --mcp"),
    ],
)
@pytest.mark.parametrize("command", ["run", "submit"])
def test_bad_mcp_options_are_one_line_and_store_nothing(
    run_ratchet: RunRatchet, tmp_path: Path, command: str, options: list[str], expected: str
) -> None:
    database = tmp_path / "ratchet.db"
    run_ratchet("migrate", "--store", f"sqlite:///{database}")
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    done = run_ratchet(
        command, "use the shop", "--model", model, *options, "--store", f"sqlite:///{database}"
    )
    assert_one_line_error(done, expected)
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_a_server_the_code_trust_does_not_admit_is_refused_before_anything_is_stored(
    run_ratchet: RunRatchet, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    env = {k: v for k, v in ratchet_env().items() if k != ALLOW_CODE_ENV}  # the suite admits the repository
    done = run_ratchet("run", "x", "--model", model, "--mcp", stdio_command(server_log), env=env)
    assert_one_line_error(done, f"admit it with --allow-code {SERVER}")
    assert not (tmp_path / "ratchet.db").exists()
    assert not server_log.exists()  # not started


def test_run_with_mcp_waits_for_approval_then_runs_the_tool_once(
    run_ratchet: RunRatchet, tmp_path: Path, server_log: Path, url: str
) -> None:
    model = one_call_script(tmp_path / "s.json", "delete_record", {"key": "k1"})
    trusted = ["--allow-code", str(SERVER)]
    server = ["--mcp", stdio_command(server_log)]
    done = run_ratchet("run", "clean up", "--model", model, *server, *trusted, "--json", "--store", url)
    assert done.returncode == EXIT_WAITS_ON_PERSON, done.stderr
    task_id = json.loads(done.stdout)["task_id"]
    assert run_ratchet("approve", task_id, "--store", url).returncode == 0
    done = run_ratchet("resume", task_id, *trusted, "--store", url)
    assert done.returncode == 0, done.stderr
    assert log_lines(server_log).count("delete_record k1") == 1


def test_submit_records_the_servers_and_overrides_for_any_worker(
    run_ratchet: RunRatchet, tmp_path: Path, server_log: Path, url: str
) -> None:
    model = one_call_script(tmp_path / "s.json", "delete_record", {"key": "k1"})
    env = ratchet_env(RATCHET_ALLOW_CODE=str(SERVER))
    server = ["--mcp", stdio_command(server_log), "--mcp-risk", "delete_record=read_only"]
    done = run_ratchet("submit", "clean up", "--model", model, *server, "--json", "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    task_id = json.loads(done.stdout)["task_id"]
    assert not server_log.exists()  # submit does not contact the server
    shown = json.loads(run_ratchet("show", task_id, "--json", "--store", url).stdout)
    [recorded] = shown["task"]["inputs_params"]["agent"]["mcp"]
    assert recorded["risk"] == {"delete_record": "read_only"}
    done = run_ratchet("resume", task_id, "--allow-code", str(SERVER), "--store", url)
    assert done.returncode == 0, done.stderr  # read_only by the override: no approval
    assert log_lines(server_log) == ["start", "delete_record k1"]


# The program as it runs where the SDK is not installed: importing it fails, as it would.
WITHOUT_SDK = "import sys; sys.modules['mcp'] = None; from ratchet.cli import main; main()"


def test_without_the_mcp_extra_the_error_names_it(tmp_path: Path) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    args = ["run", "x", "--model", model, "--mcp", "http://127.0.0.1:8000/mcp", "--store", "memory://"]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK, *args],
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_line_error(done, "pip install 'ratchet-runtime[mcp]'")


def test_a_worker_that_does_not_admit_the_server_leaves_the_task_waiting_for_its_code(
    run_ratchet: RunRatchet, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    env = {k: v for k, v in ratchet_env().items() if k != ALLOW_CODE_ENV}
    done = run_ratchet("submit", "x", "--model", model, "--mcp", stdio_command(server_log), "--json", env=env)
    assert done.returncode == 0, done.stderr  # submit leaves the trust to the workers
    task_id = json.loads(done.stdout)["task_id"]
    refused = run_ratchet("resume", task_id, env=env)
    assert_one_line_error(refused, f"task {task_id} waits for its code", f"--allow-code {SERVER}")
    assert not server_log.exists()  # never started
    done = run_ratchet("resume", task_id, "--allow-code", str(SERVER), env=env)
    assert done.returncode == 0, done.stderr
    assert log_lines(server_log) == ["start", "lookup k1"]

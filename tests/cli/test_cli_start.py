"""What the `ratchet` program imports to start a command: only what that command uses.

Each test runs the real program in a new process, through a launcher that
prints, as the process exits, every module it imported. `ratchet --version`
and `ratchet --help` import no command; `ratchet tasks` imports its own
module and the store, never the engine, the agent, a model provider, the
HTTP or MCP server, nor their libraries. (How long each takes is
bench/cli_start.py's to say.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ratchet.cli.application import COMMANDS

from ..helpers.cli import PopulatedStore, ratchet_env

# The console script (`from ratchet.cli import main`), printing the modules imported once it exits.
LAUNCHER = """
import atexit, os, sys

atexit.register(lambda: os.write(2, ("modules: " + " ".join(sorted(sys.modules)) + "\\n").encode()))
from ratchet.cli import main
main()
"""

# What no listing needs: the engine that runs tasks, the agent, the model providers, the demo,
# the servers, and the libraries they bring.
RUNNING_PARTS = (
    "ratchet.engine",
    "ratchet.agent",
    "ratchet.providers",
    "ratchet.runtime",
    "ratchet.chat",
    "ratchet.serve",
    "ratchet.mcp",
    "ratchet.cli.demo",
    "ratchet.cli.run",
    "ratchet.cli.worker",
    "pydantic_ai",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "mcp",
    "openai",
    "anthropic",
    "opentelemetry",
)


def imported_by(cwd: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `ratchet ARGS...`; return the finished process and the modules it had imported."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *args],
        cwd=cwd,
        env=ratchet_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    [line] = [line for line in done.stderr.splitlines() if line.startswith("modules: ")]
    return done, set(line.removeprefix("modules: ").split())


def among(modules: set[str], parts: tuple[str, ...]) -> list[str]:
    """The modules that are one of `parts` or inside one."""
    return sorted(name for name in modules if any(name == p or name.startswith(f"{p}.") for p in parts))


def test_version_imports_no_command_nor_pydantic_nor_rich(tmp_path: Path) -> None:
    done, modules = imported_by(tmp_path, "--version")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ratchet ")
    assert among(modules, ("ratchet.cli.tasks", "ratchet.records", "ratchet.store", "pydantic", "rich")) == []
    assert among(modules, RUNNING_PARTS) == []


def test_help_lists_every_command_without_importing_one(tmp_path: Path) -> None:
    done, modules = imported_by(tmp_path, "--help")

    assert done.returncode == 0, done.stderr
    assert "tasks" in done.stdout and "langgraph" in done.stdout
    command_modules = [name for name in modules if name.startswith("ratchet.cli.")]
    assert sorted(command_modules) == [
        "ratchet.cli.application",
        "ratchet.cli.config_file",  # ratchet.toml's defaults: read before any command runs
        "ratchet.cli.interrupts",
        "ratchet.cli.lazy",
    ]
    assert among(modules, RUNNING_PARTS) == []


def test_tasks_imports_its_module_and_the_store_not_the_engine(
    tmp_path: Path, populated_store: PopulatedStore
) -> None:
    done, modules = imported_by(tmp_path, "tasks", "--limit", "20", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert "t-running" in done.stdout
    assert {"ratchet.cli.tasks", "ratchet.store.sql.sqlite"} <= modules
    assert among(modules, RUNNING_PARTS) == []


def test_a_commands_own_help_imports_its_module_and_no_other_commands(tmp_path: Path) -> None:
    done, modules = imported_by(tmp_path, "show", "--help")

    assert done.returncode == 0, done.stderr
    assert "--force-open" in done.stdout
    command_modules = {f"ratchet.cli.{command.target.partition(':')[0]}" for command in COMMANDS.values()}
    assert sorted(command_modules & modules) == ["ratchet.cli.tasks"]

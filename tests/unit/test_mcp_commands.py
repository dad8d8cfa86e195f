"""Which stdio MCP server commands the code trust admits: programs, Python's arguments, environments."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import pytest

from ratchet.agent.mcp.servers import MCPServer, check_command
from ratchet.errors import CodeRefused
from ratchet.trust.code import CodeTrust

PYTHON = sys.executable


@pytest.fixture
def trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CodeTrust:
    """The trust of a process run in a project holding server.py."""
    (tmp_path / "server.py").write_text("print('an MCP server')\n")
    monkeypatch.chdir(tmp_path)
    return CodeTrust(root=tmp_path.resolve())


@pytest.mark.parametrize(
    "args",
    [
        ["server.py"],
        ["-u", "-I", "server.py"],
        ["-m", "ratchet"],  # an installed package
        ["-B", "-m", "ratchet", "mcp"],
    ],
)
def test_python_may_run_a_file_of_the_project_or_an_installed_module(
    trust: CodeTrust, args: list[str]
) -> None:
    assert check_command(MCPServer(command=PYTHON, args=tuple(args)), trust) == Path(PYTHON).absolute()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-m", "timeit", "-n", "1", "print(1)"], "module of Python itself"),
        (["-m", "cProfile", "/elsewhere/x.py"], "module of Python itself"),
        (["-m", "json.tool"], "module of Python itself"),
        (["-cprint(1)", "server.py"], "runs a .py file or -m MODULE here, nothing else"),
        (["-c", "print(1)"], "nothing else"),
        (["-Wdefault", "server.py"], "nothing else"),
        (["-X", "importtime", "server.py"], "nothing else"),
        (["-m"], "nothing else"),
    ],
)
def test_python_runs_nothing_else(trust: CodeTrust, args: list[str], expected: str) -> None:
    with pytest.raises(CodeRefused, match=expected):
        check_command(MCPServer(command=PYTHON, args=tuple(args)), trust)


@pytest.mark.parametrize(
    "name",
    ["PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS", "pythonhome", "LD_PRELOAD", "NODE_OPTIONS", "PATH"],
)
def test_an_environment_that_loads_other_code_is_refused(trust: CodeTrust, name: str) -> None:
    server = MCPServer(command=PYTHON, args=("server.py",), env={name: "/elsewhere"})

    with pytest.raises(CodeRefused, match=f"sets {name}, which makes a program load other code"):
        check_command(server, trust)


def test_a_plain_environment_is_kept(trust: CodeTrust) -> None:
    server = MCPServer(command=PYTHON, args=("server.py",), env={"PYTHONUNBUFFERED": "1", "API_REGION": "eu"})

    assert check_command(server, trust) == Path(PYTHON).absolute()


def test_a_console_script_beside_python_is_a_program_of_its_own(trust: CodeTrust) -> None:
    ratchet = Path(sysconfig.get_path("scripts")) / "ratchet"

    assert check_command(MCPServer(command=str(ratchet), args=("mcp",)), trust) == ratchet
    with pytest.raises(CodeRefused, match="LD_PRELOAD"):
        check_command(MCPServer(command=str(ratchet), args=("mcp",), env={"LD_PRELOAD": "/x.so"}), trust)

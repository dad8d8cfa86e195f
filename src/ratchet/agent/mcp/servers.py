"""How an agent reaches an MCP server: the `MCPServer` spec a task records, and each tool's risk.

Plain data, no SDK: an agent task records its servers in its agent spec
(``AgentSpec.mcp``), so any worker can reach them again. A stdio server is a
command the worker starts, so it is code: under a run's `CodeTrust` its
program must be admitted (`check_command`), as a task's tool sources are.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...errors import CodeRefused, InputError
from ...policy import MAX_DURATION, RetryPolicy
from ...records import RiskLevel
from ...trust.code import CodeTrust

__all__ = [
    "RISK_LEVELS",
    "MCPServer",
    "ToolRisk",
    "check_admitted",
    "check_command",
    "mcp_server",
    "tool_behaviour",
]

ToolRisk = Literal["read_only", "idempotent", "write_local", "external_action"]
RISK_LEVELS: tuple[str, ...] = ("read_only", "idempotent", "write_local", "external_action")

# What each level means for the journal and for approvals: (risk level, safe to run again).
_BEHAVIOUR: dict[str, tuple[RiskLevel, bool]] = {
    "read_only": (RiskLevel.READ_ONLY, True),
    "idempotent": (RiskLevel.WRITE_LOCAL, True),
    "write_local": (RiskLevel.WRITE_LOCAL, False),
    "external_action": (RiskLevel.EXTERNAL_ACTION, False),
}


class MCPServer(BaseModel):
    """An MCP server whose tools an agent offers its model: a command (stdio) or a URL (HTTP).

    ``MCPServer("npx -y @modelcontextprotocol/server-filesystem /tmp")``,
    ``MCPServer("http://127.0.0.1:8000/mcp")``, or the fields by name.

    Args:
        command: the program that runs the server over stdio (found on the worker's PATH).
        args: its arguments.
        env: environment variables for it, over a minimal default one (PATH, HOME ...);
            recorded with the task in the store, so no secrets.
        cwd: its working directory (default: the worker's).
        url: a streamable-HTTP server's endpoint, ``http://`` or ``https://``.
        risk: per tool (its name on the server, or as the model sees it), the level
            that overrides what its annotations say: ``read_only``, ``idempotent``,
            ``write_local`` or ``external_action``.
        prefix: prepended to each tool's name (``{prefix}_{name}``) to keep apart
            tools of the same name.
        retry: how a call that cannot reach the server is retried (default: the task's).
        timeout: seconds one call may take; past it the call fails (not retried).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: str | None = Field(default=None, min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    risk: dict[str, ToolRisk] = Field(default_factory=dict)
    prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,32}$")
    retry: RetryPolicy | None = None
    timeout: float | None = Field(default=None, gt=0, le=MAX_DURATION)

    def __init__(self, spec: str | None = None, /, **fields: Any) -> None:
        if spec is not None:
            fields = {**_parsed(spec), **fields}
        super().__init__(**fields)

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give an MCP server a command (stdio) or a url (streamable HTTP), not both")
        if self.url is not None:
            _check_url(self.url)
            if self.args or self.env or self.cwd:
                raise ValueError("args, env and cwd are for a command (stdio), not a url")
        return self

    @property
    def label(self) -> str:
        """The server as people name it in messages: its command line, or its URL."""
        if self.url is not None:
            return self.url
        assert self.command is not None
        return shlex.join([self.command, *self.args])

    def exposed_name(self, name: str) -> str:
        """The name the model sees for the server's tool `name`."""
        return f"{self.prefix}_{name}" if self.prefix else name

    def override(self, name: str) -> ToolRisk | None:
        """The level this spec sets for the server's tool `name`, if it sets one."""
        return self.risk.get(name) or self.risk.get(self.exposed_name(name))


def mcp_server(spec: str | MCPServer) -> MCPServer:
    """An `MCPServer` from a spec string or as given.

    Raises:
        InputError: the string is neither a command line nor an http(s) URL.
    """
    if isinstance(spec, MCPServer):
        return spec
    if not isinstance(spec, str):
        raise InputError(f"an MCP server is a command line, a URL or a ratchet.MCPServer, not {spec!r}")
    try:
        return MCPServer(spec)
    except ValidationError as error:
        problem = error.errors()[0]["msg"].removeprefix("Value error, ")
        raise InputError(f"MCP server {spec!r}: {problem}") from None


def _parsed(spec: str) -> dict[str, Any]:
    text = spec.strip()
    if "://" in text:
        return {"url": text}
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise InputError(f"MCP server {spec!r}: the command line does not parse ({error})") from None
    if not words:
        raise InputError("an empty MCP server: give COMMAND ARGS or an http(s):// URL")
    return {"command": words[0], "args": tuple(words[1:])}


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        raise ValueError(f"{url!r} has no valid port") from None


def tool_behaviour(annotations: dict[str, Any] | None, override: str | None = None) -> tuple[RiskLevel, bool]:
    """A tool's risk level and whether running it again is safe, from its MCP annotations.

    ``readOnlyHint``: read_only. ``destructiveHint``: external_action (safe to
    run again if also ``idempotentHint``). ``idempotentHint`` alone:
    idempotent (write_local, safe to run again). No hint: external_action.
    `override` (one of `RISK_LEVELS`) wins over the hints.
    """
    if override is not None:
        return _BEHAVIOUR[override]
    hints = annotations or {}
    if hints.get("readOnlyHint") is True:
        return _BEHAVIOUR["read_only"]
    if hints.get("destructiveHint") is True:
        return RiskLevel.EXTERNAL_ACTION, hints.get("idempotentHint") is True
    if hints.get("idempotentHint") is True:
        return _BEHAVIOUR["idempotent"]
    return _BEHAVIOUR["external_action"]


def check_command(server: MCPServer, trust: CodeTrust | None) -> Path:
    """The program a stdio server runs, checked: it exists here, and `trust` (if any) admits it.

    Admitted are programs `trust` admits as files (the project root,
    ``--allow-code``) and those installed beside this Python (its scripts
    directory: ``pip install``'s console scripts). This Python itself runs
    only a ``.py`` file or a ``-m`` module that `trust` admits and that is not
    part of Python itself (``-m timeit CODE`` runs any code), after options
    that run nothing. Under `trust`, the entry's environment may not set a
    variable that makes an admitted program load other code (``PYTHONPATH``,
    ``LD_PRELOAD``, ``NODE_OPTIONS``, ``PATH`` ...).

    Raises:
        InputError: the command is not found.
        CodeRefused: `trust` does not admit it.
    """
    assert server.command is not None
    if trust is not None:
        _check_env(server)
    found = shutil.which(server.command) if "/" not in server.command else _file(server.command, server.cwd)
    if found is None:
        raise InputError(f"MCP server {server.label!r}: no command {server.command!r} here (not on PATH)")
    program = Path(found).absolute()
    if trust is None:
        return program
    if program.resolve() == Path(sys.executable).resolve():
        _check_python_args(server, trust)
        return program
    scripts = Path(sysconfig.get_path("scripts")).absolute()
    if program.parent == scripts or trust.admits_file(program.resolve()) or trust.admits_file(program):
        return program
    raise CodeRefused(
        f"MCP server {server.label!r}: {program} lies outside the project root {trust.root} and "
        f"this Python's scripts; admit it with --allow-code {program}"
    )


def check_admitted(servers: Iterable[MCPServer], trust: CodeTrust | None) -> None:
    """Refuse a stdio server whose program `trust` does not admit; a command not found here passes.

    A worker checks this before it runs a task, as it checks the task's tool
    files: refused, the task waits for its code (``waiting(code)``); not
    found, starting the server fails later as an unreachable server does.

    Raises:
        CodeRefused: a server's program is not admitted.
    """
    if trust is None:
        return
    for server in servers:
        if server.command is None:
            continue
        try:
            check_command(server, trust)
        except CodeRefused:
            raise
        except InputError:
            pass  # not found here (or a script that is not there): the start fails, and is retried


# Options of the interpreter that take no argument and run no code of their own.
_PLAIN_PYTHON_OPTIONS = frozenset({"-u", "-I", "-E", "-s", "-S", "-B", "-O", "-OO", "-q", "-b", "-bb", "-P"})

# Python's variables that run nothing of their own (the others load a module, a directory of them,
# a startup file, or a breakpoint hook).
_PLAIN_PYTHON_VARIABLES = frozenset(
    {
        "PYTHONUNBUFFERED",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "PYTHONFAULTHANDLER",
        "PYTHONNOUSERSITE",
        "PYTHONSAFEPATH",
        "PYTHONCOERCECLOCALE",
    }
)

# Variables that make a program other than the one checked run, or make it load other code.
_CODE_VARIABLES = re.compile(
    r"(PATH|LD_.*|DYLD_.*|NODE_OPTIONS|NODE_PATH|BASH_ENV|ENV|SHELLOPTS|PERL5OPT|PERL5LIB|PERLLIB"
    r"|RUBYOPT|RUBYLIB|GCONV_PATH|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS)"
)


def _check_env(server: MCPServer) -> None:
    """Refuse an environment that would make the checked program load code nobody checked."""
    for name in server.env:
        upper = name.upper()
        python = upper.startswith("PYTHON") and upper not in _PLAIN_PYTHON_VARIABLES
        if python or _CODE_VARIABLES.fullmatch(upper):
            raise CodeRefused(
                f"MCP server {server.label!r}: its environment sets {name}, which makes a program "
                "load other code; set it in the worker's own environment instead"
            )


def _file(command: str, cwd: str | None) -> str | None:
    """A command given as a path (``./server``), taken from `cwd` when relative, if it is a file."""
    path = Path(cwd or ".") / command
    return str(path) if path.is_file() else None


def _check_python_args(server: MCPServer, trust: CodeTrust) -> None:
    args = list(server.args)
    while args and args[0] in _PLAIN_PYTHON_OPTIONS:
        args.pop(0)  # -u, -I ...: options that run nothing (an attached -cCODE is not one of them)
    if len(args) >= 2 and args[0] == "-m":
        if args[1].partition(".")[0] in sys.stdlib_module_names:
            raise CodeRefused(
                f"MCP server {server.label!r}: {args[1]} is a module of Python itself, a program "
                "(python -m timeit runs any code), not an MCP server"
            )
        trust.check_module(args[1])
        return
    if args and args[0].endswith(".py") and not args[0].startswith("-"):
        script = Path(args[0]) if server.cwd is None else Path(server.cwd) / args[0]
        trust.python_file(str(script.absolute()))
        return
    raise CodeRefused(
        f"MCP server {server.label!r}: Python runs a .py file or -m MODULE here, nothing else; "
        "admit another program with --allow-code"
    )

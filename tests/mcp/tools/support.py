"""The MCP-tools tests' server spec, scripts and readers of the test server's log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ratchet import MCPServer, RetryPolicy

from ...helpers.scripts import calls, plan, say, verdict

SERVER = Path(__file__).with_name("server.py")
QUICK_RETRY = RetryPolicy(initial_interval=0.05, maximum_attempts=2)


def stdio_server(log: Path, **options: Any) -> MCPServer:
    """The test server, run over stdio by this Python."""
    return MCPServer(command=sys.executable, args=(str(SERVER), str(log)), **options)


def stdio_command(log: Path) -> str:
    """The test server as ``--mcp`` gives it."""
    return f"{sys.executable} {SERVER} {log}"


def log_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def one_call_script(path: Path, tool: str, arguments: dict[str, Any], *more: dict[str, Any]) -> str:
    """A scripted model: a one-step plan whose act turn calls `tool`, then reports; the check passes."""
    script = {
        "plan": [plan("use the tool")],
        "act": [calls((tool, arguments)), *more, say("done")],
        "verify": [verdict(True)],
    }
    path.write_text(json.dumps(script), encoding="utf-8")
    return f"scripted:{path}"

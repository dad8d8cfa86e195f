"""The tools every agent has: its workspace's files, artifacts, and (if allowed) a shell."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..errors import NonRetryableError
from ..records import RiskLevel
from ..store import StateStore
from ..tools import Tool, tool
from ..trust.workspace import writing_in
from .context_slice import read_state_tool

__all__ = ["BUILTIN_TOOL_NAMES", "builtin_tools", "inside"]

MAX_READ = 20_000

BUILTIN_TOOL_NAMES = frozenset(
    {"list_files", "read_file", "write_file", "read_artifact", "read_state", "run_shell"}
)
"""The names `builtin_tools` gives its tools (with the shell allowed): a user's tool may not take one."""


def inside(workspace: Path, path: str) -> Path:
    """`path` resolved inside `workspace`.

    Raises:
        NonRetryableError: the path leads out of the workspace.
    """
    root = workspace.resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise NonRetryableError(f"{path!r} is outside the task's workspace; use a path inside it")
    return target


def builtin_tools(workspace: Path, store: StateStore, *, allow_shell: bool) -> list[Tool]:
    """The built-in tools of one task, bound to its workspace and store."""

    @tool(name="list_files", risk=RiskLevel.READ_ONLY)
    def list_files(path: str = ".") -> list[str]:
        """List the files under a directory of the task's workspace."""
        base = inside(workspace, path)
        if not base.is_dir():
            raise NonRetryableError(f"{path!r} is not a directory of the workspace")
        root = workspace.resolve()
        return sorted(str(p.relative_to(root)) for p in base.rglob("*") if p.is_file())

    @tool(name="read_file", risk=RiskLevel.READ_ONLY)
    def read_file(path: str, offset: int = 0, length: int = MAX_READ) -> str:
        """Read a text file of the task's workspace (up to `length` characters from `offset`)."""
        target = inside(workspace, path)
        if not target.is_file():
            raise NonRetryableError(f"no file {path!r} in the workspace")
        return target.read_text(encoding="utf-8", errors="replace")[offset : offset + length]

    @tool(name="write_file", risk=RiskLevel.WRITE_LOCAL, idempotent=True)
    def write_file(path: str, content: str) -> str:
        """Write a text file in the task's workspace (replacing it); returns what was written."""
        target = inside(workspace, path)
        with writing_in(workspace):  # a full disk stops the task resumable; the call runs again then
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"

    @tool(name="read_artifact", risk=RiskLevel.READ_ONLY)
    async def read_artifact(artifact_id: str, offset: int = 0, length: int = 4000) -> str:
        """Read part of an artifact (a large tool output kept out of the prompt)."""
        body = await store.read_artifact(artifact_id, offset=offset, length=min(length, MAX_READ))
        return body.decode("utf-8", errors="replace")

    tools = [list_files, read_file, write_file, read_artifact, read_state_tool(store)]
    if allow_shell:

        @tool(name="run_shell", risk=RiskLevel.EXTERNAL_ACTION, timeout=300)
        async def run_shell(command: str) -> dict[str, Any]:
            """Run a shell command in the task's workspace; returns its exit code and output."""
            process = await asyncio.create_subprocess_shell(
                command, cwd=workspace, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
            )
            output, _ = await process.communicate()
            return {"exit_code": process.returncode, "output": output.decode("utf-8", "replace")[-MAX_READ:]}

        tools.append(run_shell)
    return tools

"""What the write tools' tests share: a bare MCP server with the tools of one agent, scripts, tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

from ratchet import Runtime
from ratchet.store import StateStore

from ...helpers.scripts import calls, plan, say, verdict

MAIL_TOOLS = """
import ratchet


@ratchet.tool(risk="external_action")
def send_mail(to: str) -> str:
    return f"mail sent to {to}"
"""


@pytest.fixture
def rt(store: StateStore, tmp_path: Path) -> Runtime:
    """The Runtime the tools write through; it may load the tools files the tests write."""
    return Runtime(store, allow_code=[tmp_path])


def server_as(rt: Runtime, agent: str | None) -> MCPServer:
    """A bare MCP server whose write tools act as `agent` (None: as no agent)."""
    from ratchet.mcp.state_tools import register_write_tools

    server = MCPServer("ratchet-test")
    register_write_tools(server, rt, lambda ctx: agent)
    return server


async def call(rt: Runtime, acting: str | None, tool: str, /, **arguments: Any) -> CallToolResult:
    """Call `tool` through the SDK's in-memory client, as the agent `acting`."""
    async with Client(server_as(rt, acting)) as client:
        return await client.call_tool(tool, arguments)


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a call that succeeded."""
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


def text(result: CallToolResult) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


def refused(result: CallToolResult) -> str:
    """The one-line message of a call that failed as a tool error."""
    assert result.is_error
    message = text(result)
    assert "\n" not in message, message
    return message


def script(tmp_path: Path, entries: dict[str, list[Any]], name: str = "script.json") -> str:
    """A scripted model spec for `entries` (a plan, act answers, verdicts)."""
    path = tmp_path / name
    path.write_text(json.dumps(entries), encoding="utf-8")
    return f"scripted:{path}"


def one_step(*acts: dict[str, Any]) -> dict[str, list[Any]]:
    """A one-step plan whose act turns are `acts` and whose check passes."""
    return {"plan": [plan("mail the team")], "act": list(acts), "verify": [verdict(True)]}


def mail_tools(tmp_path: Path) -> str:
    path = tmp_path / "mail_tools.py"
    path.write_text(MAIL_TOOLS, encoding="utf-8")
    return str(path)


MAIL = calls(("send_mail", {"to": "team@example.com"}))
DONE = say("mailed the team")

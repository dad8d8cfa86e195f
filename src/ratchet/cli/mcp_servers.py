"""``--mcp`` and ``--mcp-risk`` of `ratchet run` and `ratchet submit`: the agent's MCP servers, checked.

Checked now, before anything is stored: each spec parses, a stdio server's
command exists here (and, for `ratchet run`, the code trust admits it), each risk level is one
Ratchet knows, and the SDK is installed. The servers are not contacted: a
task lists their tools when it first runs, on the worker that runs it
(docs/mcp.md, "Giving an agent MCP tools").
"""

from __future__ import annotations

from ..agent.mcp.servers import RISK_LEVELS, MCPServer, ToolRisk, check_command, mcp_server
from ..errors import InputError
from ..trust.code import CodeTrust

__all__ = ["checked_mcp_servers"]


def checked_mcp_servers(specs: list[str], risks: list[str], *, trust: CodeTrust | None) -> list[MCPServer]:
    """The servers ``--mcp`` names, each with the ``--mcp-risk`` overrides.

    `trust` is the code trust of the process that will run the task (`run`'s);
    None where that is another process (`submit`: the worker's trust decides there).

    Raises:
        InputError: a spec is neither a command line nor an http(s) URL, its
            command is not found or not admitted, a risk override is not
            ``TOOL=LEVEL``, or the ``mcp`` SDK is not installed.
    """
    overrides = _overrides(risks)
    if overrides and not specs:
        raise InputError("--mcp-risk sets the risk of an MCP server's tool: give the server with --mcp")
    servers = []
    for spec in specs:
        try:
            server = mcp_server(spec)
            if server.command is not None:
                check_command(server, trust)
        except InputError as error:
            raise InputError(f"--mcp: {error.message}") from None
        servers.append(server.model_copy(update={"risk": {**server.risk, **overrides}}))
    if servers:
        from ..agent.mcp.client import require_sdk

        require_sdk()
    return servers


def _overrides(risks: list[str]) -> dict[str, ToolRisk]:
    found: dict[str, ToolRisk] = {}
    for text in risks:
        tool, sep, level = text.partition("=")
        if not sep or not tool.strip() or level.strip() not in RISK_LEVELS:
            raise InputError(f"--mcp-risk {text!r}: write TOOL=LEVEL, LEVEL one of {', '.join(RISK_LEVELS)}")
        found[tool.strip()] = level.strip()  # type: ignore[assignment]  # checked against RISK_LEVELS
    return found

"""An MCP server's tools as an agent's tools: listed once per task, each call journaled.

The listing of each server is itself a journaled call (a ``read_only`` one,
retried under the server's retry policy), so the tools the model saw are
the same on every resume, and a replay needs no server: a connection opens
only when a live call needs it. Each listed tool becomes an `MCPTool`, a
`Tool` like any other: approvals, the journal, in-doubt rules and retries
treat it by its risk level (`tool_behaviour`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from ...errors import InputError, MCPServerUnreachable, NonRetryableError, OperationFailed
from ...records import RiskLevel
from ...tools import Tool, ToolContext
from .servers import MCPServer, tool_behaviour

if TYPE_CHECKING:
    from ...engine.context import Context
    from .client import Connections

__all__ = ["MCPTool", "offer_mcp_tools"]


class MCPTool(Tool):
    """One tool of an MCP server, called through the run's connection to it.

    Its arguments are checked against the input schema the server declares
    (an argument that does not fit is the model's error, and nothing is
    sent); the server checks them again.
    """

    def __init__(self, server: MCPServer, listed: dict[str, Any], connections: Connections) -> None:
        remote = str(listed["name"])
        risk, idempotent = tool_behaviour(listed.get("annotations"), server.override(remote))
        super().__init__(
            self._unused,
            name=server.exposed_name(remote),
            risk=risk,
            idempotent=idempotent,
            retry=server.retry,
            timeout=server.timeout,
        )
        self.server = server
        self.remote_name = remote
        self.description = str(listed.get("description") or "")
        schema = listed.get("input_schema")
        self.input_schema: dict[str, Any] = schema if isinstance(schema, dict) else {"type": "object"}
        self._connections = connections

    async def _unused(self) -> None:
        """Not called: `invoke` calls the server."""

    def __repr__(self) -> str:
        return f"<MCPTool {self.name} of {self.server.label} risk={self.risk} idempotent={self.idempotent}>"

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.input_schema}

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against the server's input schema.

        Raises:
            NonRetryableError: they do not fit; the message says why.
        """
        import jsonschema  # type: ignore[import-untyped]  # the [mcp] extra: imported with the SDK

        if not isinstance(args, dict):
            raise NonRetryableError(f"bad arguments for {self.name}: give an object")
        try:
            jsonschema.validate(args, self.input_schema)
        except jsonschema.ValidationError as bad:
            where = ".".join(str(p) for p in bad.absolute_path) or "arguments"
            raise NonRetryableError(f"bad arguments for {self.name}: {where}: {bad.message}") from None
        except jsonschema.SchemaError:
            pass  # a schema the server got wrong: the server checks the arguments itself
        return dict(args)

    async def invoke(self, args: dict[str, Any], context: ToolContext | None) -> JsonValue:
        arguments = self.validate(args)
        return await self._connections.call_tool(
            self.server, self.remote_name, arguments, safe_to_repeat=self.safe_to_repeat
        )


async def offer_mcp_tools(
    ctx: Context, servers: Sequence[MCPServer], reserved: Collection[str]
) -> tuple[list[MCPTool], Connections]:
    """List each server's tools (journaled) and make them tools; the run's connections with them.

    The caller closes the connections when the run ends.

    Raises:
        MCPServerUnreachable: a server's tools could not be listed, after the retries.
        InputError: a tool's name is taken (a built-in, the agent's, another
            server's), or a risk override names no listed tool.
        MissingExtra: the ``mcp`` SDK is not installed.
    """
    from .client import Connections, require_sdk

    require_sdk()
    connections = Connections()
    try:
        tools = await _list_all(ctx, servers, reserved, connections)
    except BaseException:
        await connections.close()
        raise
    return tools, connections


async def _list_all(
    ctx: Context, servers: Sequence[MCPServer], reserved: Collection[str], connections: Connections
) -> list[MCPTool]:
    owners = dict.fromkeys(reserved, "a built-in tool")
    owners.update({name: "one of the agent's tools" for name in ctx.tools if name not in owners})
    made: list[MCPTool] = []
    for server in servers:
        offered = [
            MCPTool(server, listed, connections)
            for listed in await _listing(ctx, server, connections)
            if isinstance(listed, dict)
        ]
        for tool in offered:
            taken = owners.get(tool.name)
            if taken is not None:
                raise InputError(
                    f"MCP server {server.label!r} offers a tool named {tool.name!r}, the name of {taken}; "
                    "give the server a prefix (MCPServer(..., prefix='NAME'))"
                )
            owners[tool.name] = f"a tool of MCP server {server.label!r}"
        made += offered
        described = ", ".join(f"{t.name} ({_level(t)})" for t in offered)
        await ctx.emit(
            f"MCP server {server.label!r} offers {len(offered)} tool(s): {described or 'none'}",
            kind="mcp_tools",
            data={"server": server.label, "tools": {t.name: _level(t) for t in offered}},
        )
    _check_overrides(servers, made)
    return made


async def _listing(ctx: Context, server: MCPServer, connections: Connections) -> list[JsonValue]:
    async def list_tools() -> JsonValue:
        listed: JsonValue = await connections.list_tools(server)  # type: ignore[assignment]
        return listed

    lister = Tool(list_tools, name=f"mcp_list_tools {server.label}", risk="read_only", retry=server.retry)
    try:
        listed = await ctx.call_tool(lister)
    except OperationFailed as failed:
        raise MCPServerUnreachable(  # the error names the server
            f"an MCP server's tools could not be listed after {failed.attempts} attempt(s): {failed.error}"
        ) from None
    return listed if isinstance(listed, list) else []


def _level(tool: MCPTool) -> str:
    """The tool's level as people set it: ``idempotent`` for a write that is safe to repeat."""
    if tool.risk is RiskLevel.WRITE_LOCAL and tool.idempotent:
        return "idempotent"
    if tool.risk is RiskLevel.EXTERNAL_ACTION and tool.idempotent:
        return "external_action, idempotent"
    return str(tool.risk)


def _check_overrides(servers: Sequence[MCPServer], made: Sequence[MCPTool]) -> None:
    """A risk override must name a listed tool: a typo must not leave a tool unguarded."""
    known = {t.name for t in made} | {t.remote_name for t in made}
    for server in servers:
        for name in server.risk:
            if name not in known:
                listed = ", ".join(sorted(t.name for t in made)) or "none"
                raise InputError(
                    f"the risk override for {name!r} names no tool of the agent's MCP servers "
                    f"(they offer: {listed})"
                )

"""Connections from one agent run to its MCP servers, through the official SDK's `mcp.Client`.

A connection opens when a live call first needs its server (a replayed call
needs none) and stays open for the rest of the run; `Connections.close`
closes them all when the run ends. The SDK's client lives in anyio task
groups that must be left by the task that entered them, while a run's tool
calls may run in tasks of their own (``ctx.call_tools``), so each connection
is held by a task of its own (`_Held`) and calls only use its session.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pydantic import JsonValue

from ...errors import CodeRefused, MCPServerUnreachable, MCPToolError, MissingExtra
from ...trust.code import enforced_trust
from .servers import MCPServer, check_admitted

try:
    import mcp as sdk
except ImportError:  # pragma: no cover - exercised without the extra
    sdk = None  # type: ignore[assignment]

__all__ = ["CONNECT_TIMEOUT", "Connections", "require_sdk"]

CONNECT_TIMEOUT = 30.0  # seconds to start (or reach) a server and finish its handshake
_CLOSE_TIMEOUT = 5.0
_MAX_PAGES = 100  # of a tool listing: a server that pages forever is cut off here


def require_sdk() -> None:
    """Raise `MissingExtra` when the ``mcp`` SDK is not installed."""
    if sdk is None:
        raise MissingExtra("giving an agent MCP tools", "the MCP SDK", "mcp")


def _cause(error: BaseException) -> str:
    """One line saying what went wrong, looking inside the exception groups anyio raises."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _Held:
    """One server's connection, entered and left by its own task."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._client: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp {server.label}")

    def _target(self) -> Any:
        server = self.server
        if server.url is not None:
            return server.url
        return sdk.StdioServerParameters(
            command=server.command or "", args=list(server.args), env=server.env or None, cwd=server.cwd
        )

    async def _hold(self) -> None:
        try:
            async with sdk.Client(self._target()) as client:
                self._client.set_result(client)
                await self._closing.wait()
        except BaseException as error:
            if not self._client.done():
                self._client.set_exception(self._unreachable(error))
            if isinstance(error, asyncio.CancelledError):
                raise

    def _unreachable(self, error: BaseException) -> MCPServerUnreachable:
        return MCPServerUnreachable(f"MCP server {self.server.label!r} could not be reached: {_cause(error)}")

    async def client(self) -> Any:
        try:
            return await asyncio.wait_for(asyncio.shield(self._client), CONNECT_TIMEOUT)
        except TimeoutError:
            raise MCPServerUnreachable(
                f"MCP server {self.server.label!r} did not answer within {CONNECT_TIMEOUT:g} s"
            ) from None

    @property
    def broken(self) -> bool:
        """The connection failed, or ended: a new one is opened for the next call."""
        return self._task.done()

    async def close(self) -> None:
        self._closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), _CLOSE_TIMEOUT)
        except asyncio.CancelledError:  # the run itself is cancelled: stop the connection, unwind on
            self._task.cancel()
            raise
        except BaseException:  # it did not close in time, or failed (its calls were told already)
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


class Connections:
    """The open connections of one run, by server; each opened on first use."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}  # by the server's spec, as JSON

    def _connection(self, server: MCPServer) -> _Held:
        require_sdk()
        key = server.model_dump_json()
        held = self._held.get(key)
        if held is None or held.broken:
            _check_admitted(server)
            held = self._held[key] = _Held(server)
        return held

    async def list_tools(self, server: MCPServer) -> list[dict[str, JsonValue]]:
        """The server's tools, every page: name, description, input schema and annotations.

        Raises:
            MCPServerUnreachable: the server could not be started, reached or asked.
        """
        held = self._connection(server)
        client = await held.client()
        listed: list[dict[str, JsonValue]] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                listed += [_described(tool) for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
        except sdk.MCPError as error:
            raise MCPServerUnreachable(
                f"MCP server {server.label!r} did not list its tools: {error}"
            ) from None
        except Exception as error:
            raise held._unreachable(error) from None
        return listed

    async def call_tool(
        self, server: MCPServer, name: str, arguments: dict[str, Any], *, safe_to_repeat: bool
    ) -> JsonValue:
        """Call the server's tool `name`: its text, else its structured result, else its content blocks.

        Raises:
            MCPServerUnreachable: the server could not be reached (before the call was sent,
                or, for a tool safe to run again, during it): retryable.
            MCPToolError: the tool answered with an error, the server refused the call,
                or the connection broke during a call that may have happened.
        """
        held = self._connection(server)
        client = await held.client()  # not reached: nothing was sent, so trying again is safe
        try:
            result = await client.call_tool(name, arguments)
        except sdk.MCPError as error:
            raise MCPToolError(f"MCP server {server.label!r} refused {name}: {error}") from None
        except Exception as error:
            if safe_to_repeat:
                raise held._unreachable(error) from None
            raise MCPToolError(
                f"the connection to MCP server {server.label!r} broke during {name} ({_cause(error)}); "
                "it may or may not have happened"
            ) from None
        if result.is_error:
            raise MCPToolError(_text(result.content) or f"{name} failed (the server gave no reason)")
        text = _text(result.content)
        if text is not None:  # what the server says in words; structured content is its copy in JSON
            return text
        if result.structured_content is not None:
            structured: JsonValue = result.structured_content
            return structured
        content: JsonValue = [
            block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
        ]
        return content

    async def close(self) -> None:
        """Close every connection (stopping the stdio servers this run started)."""
        held, self._held = list(self._held.values()), {}
        for connection in held:
            await connection.close()


def _check_admitted(server: MCPServer) -> None:
    """Refuse for good (not retried) a stdio server the run's code trust does not admit."""
    try:
        check_admitted([server], enforced_trust())
    except CodeRefused as refused:
        refused.retryable = False  # type: ignore[attr-defined]  # RetryPolicy.is_retryable reads it
        raise


def _text(content: list[Any]) -> str | None:
    """The text blocks of a result, joined; None when it has other blocks (images ...) or none."""
    if not content or any(getattr(block, "type", None) != "text" for block in content):
        return None
    return "\n".join(block.text for block in content)


def _described(tool: Any) -> dict[str, JsonValue]:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    return {
        "name": tool.name,
        "description": tool.description or tool.title or "",
        "input_schema": tool.input_schema,
        "annotations": annotations,
    }

"""`build_server`: the MCP server over a store, and the two transports it is served on.

`ratchet mcp` opens the store, calls `build_server`, then `serve_stdio` or
`serve_http` (streamable HTTP at ``/mcp``). Everything the server serves is
read from (or written to) the store at each request, so several servers,
workers and CLIs share one store as they would share it without MCP.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import SubscribeRequestParams, UnsubscribeRequestParams
from pydantic import Field

from .._distribution import DISTRIBUTION
from ..errors import InputError, RatchetError
from ..runtime import Runtime
from ..store import StateStore
from ..trust.hosts import HostGuard, ServedNames
from ..trust.listening import serve_asgi
from ..views import documents
from .identity import TokenGate, Tokens, caller
from .state_server import StateServer
from .state_tools import register_write_tools

__all__ = ["DEFAULT_PORT", "MCP_PATH", "build_server", "serve_http", "serve_stdio"]

DEFAULT_PORT = 8765
MCP_PATH = "/mcp"

_INSTRUCTIONS = (
    "Ratchet's durable agent tasks. Each task's state is the resource "
    "state://agents/{agent}/tasks/{task}; an agent's tasks are state://agents/{agent}/tasks; "
    "a task's recent events state://tasks/{task}/events; its artifacts "
    "state://tasks/{task}/artifacts/{artifact}. Subscribe to a task's URI to hear when it changes."
)


def build_server(
    runtime_or_store: Runtime | StateStore, *, agent: str | None, default_model: str | None = None
) -> StateServer:
    """The MCP server over a store: its resources, subscriptions and tools.

    Args:
        runtime_or_store: the store to serve, or a Runtime over it (open).
        agent: the agent a connection acts as when its transport says nothing
            else (``--agent``); None: it acts as no agent.
        default_model: the model of a task ``create_task`` asks for without
            one (``ratchet mcp --model``); None: ``RATCHET_MODEL`` of the server.
    """
    runtime = runtime_or_store if isinstance(runtime_or_store, Runtime) else Runtime(runtime_or_store)
    server = StateServer(
        runtime,
        agent=agent,
        name="ratchet",
        version=_version(),
        instructions=_INSTRUCTIONS,
        log_level="WARNING",
    )
    watch = server.watch
    # Both ways to subscribe: subscriptions/listen (2026-07-28) is the SDK's own handler, told
    # which URIs each stream watches by this middleware; resources/subscribe (earlier clients)
    # has no MCPServer API, so it goes on the low-level server it wraps.
    server.middleware.append(watch.listen_middleware)
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, watch.subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, watch.unsubscribe)
    _add_read_tools(server)
    register_write_tools(server, runtime, caller, default_model=default_model)
    return server


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # a source tree that was never installed
        return ""


def _add_read_tools(server: StateServer) -> None:
    store = server.store

    @server.tool(
        name="get_state",
        title="Get a task's state",
        description="The task's document, as the resource state://agents/{agent}/tasks/{task} serves it: "
        "status and wait reason, goal, inputs, plan with each step's status, AgentState, budget used "
        "and left, pending approval or question, parent and children.",
    )
    async def get_state(
        task_id: Annotated[str, Field(min_length=1, max_length=1000, description="The task's id.")],
    ) -> dict[str, Any]:
        try:
            return await documents.task_document(store, task_id)
        except InputError as exc:
            raise ToolError(exc.message) from None
        except RatchetError as exc:
            raise ToolError(f"the store could not be read: {exc.message}") from None


async def serve_stdio(server: StateServer) -> None:
    """Serve one client on standard input and output until it disconnects."""
    try:
        await server.run_stdio_async()
    finally:
        await server.watch.close()


async def serve_http(
    server: StateServer,
    *,
    host: str,
    port: int,
    tokens: Tokens | None,
    names: ServedNames | None = None,
    own_log_lines: bool = False,
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until interrupted (port 0: any free port).

    With `own_log_lines`, uvicorn's log lines go to the process's handlers
    (``--log-format json``), not in uvicorn's format.

    A request must name this server (`ratchet.trust.hosts`: loopback names, the
    address it came to, `names`), else 421, and come from no other origin, else
    403. With `tokens`, every request needs one of them as its bearer token
    (401 otherwise).

    Raises:
        InputError: the address cannot be listened on (in use, not this machine's).
    """
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's own Host check (loopback names at any port, on a loopback bind only) gives way to
    # the one `ratchet serve` makes, so both servers answer to the same names.
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host, transport_security=unchecked)
    asgi: Any = HostGuard(app if tokens is None else TokenGate(app, tokens), names or ServedNames())
    try:
        await serve_asgi(
            asgi,
            host=host,
            port=port,
            lifespan="on",
            own_log_lines=own_log_lines,
            saying=lambda url: (
                f"ratchet mcp: serving {url}{MCP_PATH}"
                + (" (bearer tokens required)" if tokens is not None else "")
            ),
        )
    finally:
        await server.watch.close()

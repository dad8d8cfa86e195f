"""`ratchet mcp`: serve the store's tasks to MCP clients (docs/mcp.md).

The SDK is imported only once the command runs, so the rest of the CLI starts
without it and a user without the ``[mcp]`` extra gets one line naming it.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import InputError
from ..providers.base import require_library
from ..runtime import Runtime
from ..store import DEFAULT_STORE_URL
from ..trust.code import CodeTrust
from ..trust.hosts import ServedNames, served_names
from .logs import LogFormat, LogLevel, observe_process
from .options import (
    AllowCodeOption,
    AllowedHostOption,
    ForceOpenOption,
    LogFormatOption,
    LogLevelOption,
    ServerModelOption,
    StoreOption,
)
from .resume import make_cwd_importable
from .store_access import open_store_for, run_async

if TYPE_CHECKING:
    from ..trust.tokens import Tokens

__all__ = ["mcp_command"]

DEFAULT_PORT = 8765  # ratchet.mcp.server.DEFAULT_PORT, repeated so --help needs no SDK


class Transport(enum.StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def mcp_command(
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    transport: Annotated[
        Transport,
        typer.Option(
            "--transport", help="stdio: one client on standard input/output; http: streamable HTTP."
        ),
    ] = Transport.STDIO,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDRESS",
            help="The address HTTP listens on; any other than loopback needs --token-file.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, metavar="N", help="The port HTTP listens on.")
    ] = DEFAULT_PORT,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="ID",
            help="The agent id clients act as (over HTTP, a token file may give each token its own).",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="HTTP only: every request needs a bearer token of this file; one 'AGENT_ID TOKEN' "
            "a line (a bare TOKEN acts as --agent).",
        ),
    ] = None,
    allow_code: AllowCodeOption = None,
    allowed_host: AllowedHostOption = None,
    log_level: LogLevelOption = LogLevel.WARNING,
    log_format: LogFormatOption = LogFormat.TEXT,
    model: ServerModelOption = None,
) -> None:
    """Serve the store's tasks over MCP: state://agents/AGENT/tasks/TASK resources, subscriptions, tools.

    Over stdio (the default), an MCP client such as Claude Desktop starts this
    command itself. Over HTTP, clients connect to http://HOST:PORT/mcp; the
    server binds loopback unless --host says otherwise, refuses another
    address without --token-file, and answers only requests that name it
    (loopback names, the address they came to, --allowed-host).
    """
    require_library("mcp", feature="`ratchet mcp`", library="the MCP SDK", extra="mcp")
    if agent is not None and not agent.strip():
        raise InputError("--agent is empty; give the agent id clients act as")
    if transport is Transport.STDIO and token_file is not None:
        raise InputError("--token-file is for --transport http; over stdio, clients act as --agent")
    from ..trust.tokens import is_loopback, load_tokens

    if transport is Transport.HTTP and token_file is None and not is_loopback(host):
        raise InputError(
            f"refusing to serve HTTP on {host} without --token-file: anyone who reaches it could "
            "read and steer every task; give --token-file, or bind 127.0.0.1"
        )
    tokens = None if token_file is None else load_tokens(token_file)
    if transport is Transport.STDIO and allowed_host:
        raise InputError("--allowed-host is for --transport http; over stdio, no request names a host")
    http = transport is Transport.HTTP
    names = served_names(allowed_host or (), tokens=tokens is not None) if http else ServedNames()
    CodeTrust.here(allow_code or ())  # a bad allowance is bad input now, not at a client's create_task
    make_cwd_importable()  # create_task may name a tools module of the project, as `ratchet submit` may
    observe_process(log_level, log_format)
    run_async(
        _serve(
            store,
            transport,
            host=host,
            port=port,
            agent=agent,
            tokens=tokens,
            names=names,
            allow_code=allow_code or [],
            default_model=model,
            log_format=log_format,
        )
    )


async def _serve(
    url: str,
    transport: Transport,
    *,
    host: str,
    port: int,
    agent: str | None,
    tokens: Tokens | None,
    names: ServedNames,
    allow_code: list[str],
    default_model: str | None,
    log_format: LogFormat,
) -> None:
    from ..mcp.server import build_server, serve_http, serve_stdio  # needs the SDK

    async with open_store_for(url, create=True) as store:
        # The trust decides which tools files a client's create_task may name (docs/mcp.md, "Tools").
        server = build_server(Runtime(store, allow_code=allow_code), agent=agent, default_model=default_model)
        if transport is Transport.STDIO:
            await serve_stdio(server)
        else:
            await serve_http(
                server,
                host=host,
                port=port,
                tokens=tokens,
                names=names,
                own_log_lines=log_format is LogFormat.JSON,
            )

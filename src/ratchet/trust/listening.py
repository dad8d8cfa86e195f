"""How `ratchet serve` and `ratchet mcp` serve their ASGI app: on a socket bound before the server starts.

uvicorn reports a port it cannot bind as a log line and exits 3 after its
start-up; binding first turns a busy port or a wrong host into one line of
bad input (exit 2), said before the server runs. uvicorn then names no
address (it is given a socket), so the server says where it answers.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from typing import Any, Literal

from ..errors import InputError

__all__ = ["listen_socket", "listening_url", "serve_asgi"]

_BACKLOG = 2048  # uvicorn's own default


async def serve_asgi(
    app: Any,
    *,
    host: str,
    port: int,
    saying: Callable[[str], str],
    log_level: str = "warning",
    access_log: bool = True,
    lifespan: Literal["auto", "on", "off"] = "auto",
    own_log_lines: bool = False,
) -> None:
    """Serve `app` at HOST:PORT until interrupted (port 0: any free port), first printing
    ``saying(URL)`` to stderr, URL being ``http://HOST:PORT`` as bound.

    uvicorn writes its log lines in its own format, unless `own_log_lines`:
    then they go to the process's handlers, as Ratchet's own lines do (one
    JSON object a line under ``--log-format json``).

    uvicorn is imported here, when a server starts: it comes with the extras that serve.

    Raises:
        InputError: the address cannot be listened on (in use, not this machine's).
    """
    import uvicorn

    listening = listen_socket(host, port)
    try:
        config = uvicorn.Config(
            app,
            log_level=log_level,
            access_log=access_log,
            lifespan=lifespan,
            # None: no handlers of its own, so its loggers' records reach the root logger's.
            log_config=None if own_log_lines else uvicorn.config.LOGGING_CONFIG,
        )
        print(saying(listening_url(host, listening)), file=sys.stderr, flush=True)
        await uvicorn.Server(config).serve(sockets=[listening])
    finally:
        listening.close()


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to the address, so a busy port is one line of error, not a server's log."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listening = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); check --host") from None
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        # Listening now, not when uvicorn's start-up gets to it: whoever reads the URL printed
        # before the server starts (a person, a script, a test) is queued, never refused.
        listening.listen(_BACKLOG)
    except OSError as exc:
        listening.close()
        raise InputError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port or --host"
        ) from None
    return listening


def listening_url(host: str, listening: socket.socket) -> str:
    """The ``http://HOST:PORT`` a server on `listening` answers at (port 0: the one the socket took)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{listening.getsockname()[1]}"

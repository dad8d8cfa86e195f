"""A listening socket bound before a server starts, for `ratchet serve` and `ratchet mcp`.

uvicorn reports a port it cannot bind as a log line and exits 3 after its
start-up; binding first turns a busy port or a wrong host into one line of
bad input (exit 2), said before anything else runs.
"""

from __future__ import annotations

import socket

from .errors import InputError

__all__ = ["listen_socket", "listening_url"]


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

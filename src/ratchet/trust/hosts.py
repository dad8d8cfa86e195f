"""The names a server of Ratchet answers to: no web page reaches it through DNS rebinding.

A page of another site that points its own name at 127.0.0.1 (DNS
rebinding) makes the browser send its requests to the server with that
name in ``Host`` and its own origin in ``Origin``; the browser then treats
the server's answers as the page's own. So `ratchet serve` and `ratchet mcp`
over HTTP answer only a ``Host`` that names them, 421 otherwise, and refuse a
request whose ``Origin`` is not one of theirs with 403. A request names this
server when its host is

- a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``) at the port the
  request came in on;
- the address the request came in on, at that port (``192.168.1.5:8000`` on
  a server bound to ``0.0.0.0``);
- a name the operator allows (``--allowed-host``, `ALLOWED_HOSTS_ENV`):
  ``NAME`` at any port, ``NAME:PORT`` at that port only; ``*`` admits every
  name, and is refused without a token file.

An origin is the server's own when its host is one of those: the port is
part of the comparison, so another service's page on ``localhost:3000`` is
not this server's ``localhost:8000``. The request's ``Host`` never decides
what the server is called: it is what is checked.

No server library is imported here: the CLI parses the names before the
server's extra loads.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import InputError
from ..printable import printable

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ALLOWED_HOSTS_ENV", "ANY_NAME", "LOOPBACK_NAMES", "HostGuard", "ServedNames", "served_names"]

ALLOWED_HOSTS_ENV = "RATCHET_ALLOWED_HOSTS"
"""The environment variable of `--allowed-host`: names separated by commas or spaces."""

ANY_NAME = "*"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# A DNS name (a label may not start with a hyphen); an address is checked by `ipaddress`.
_DNS_NAME = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?:\.(?!-)[a-z0-9_-]{1,63})*\.?")
_SHOWN_CHARS = 100


@dataclass(frozen=True)
class _Name:
    host: str  # lower case; an IPv6 address in brackets
    port: int | None  # None: any port


@dataclass(frozen=True)
class ServedNames:
    """The names the operator allows beyond those every request's connection gives (see the module)."""

    allowed: tuple[_Name, ...] = ()
    any_name: bool = False

    def admits(self, authority: str, default_port: int, scope: Scope) -> bool:
        """Whether `authority` (``host[:port]``) names this server, for a request on `scope`'s connection."""
        if self.any_name:
            return True
        found = _split(authority, default_port)
        if found is None:
            return False
        host, port = found
        if any(name.host == host and name.port in (None, port) for name in self.allowed):
            return True
        server = scope.get("server")
        if not server or server[1] is None:  # a Unix socket: only the names given
            return False
        local, local_port = _address(str(server[0])), int(server[1])
        return port == local_port and (host in LOOPBACK_NAMES or host == local)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The status and one-line reason a request is refused with, or None when it names this server."""
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers") or ():
            headers.setdefault(key, value)  # the first, as the app reads it
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.admits(host, _DEFAULT_PORTS.get(scope.get("scheme", "http"), 80), scope):
            return 421, (
                f"this server does not answer to the name {_shown(host)}: reach it by a name it serves, "
                "or start it with --allowed-host NAME"
            )
        origin = headers.get(b"origin")
        if origin is not None and not self._own_origin(origin.decode("latin-1"), scope):
            return 403, (
                f"refused a request from the origin {_shown(origin.decode('latin-1'))}, "
                "which is not this server's: use its own page, or a client that sends no Origin"
            )
        return None

    def _own_origin(self, origin: str, scope: Scope) -> bool:
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or parts.path or parts.query or "@" in parts.netloc:
            return False
        return self.admits(parts.netloc, _DEFAULT_PORTS[parts.scheme], scope)


def served_names(values: Iterable[str], *, tokens: bool) -> ServedNames:
    """The names of ``--allowed-host``, then of `ALLOWED_HOSTS_ENV` (each value may hold several).

    Args:
        values: the option's values; commas or spaces may separate several names in one.
        tokens: whether the server has a token file (``*`` needs one).

    Raises:
        InputError: a value is not ``NAME``, ``NAME:PORT`` or ``*``, or ``*``
            is given without a token file.
    """
    allowed: list[_Name] = []
    any_name = False
    for value in [*values, os.environ.get(ALLOWED_HOSTS_ENV, "")]:
        for text in value.replace(",", " ").split():
            if text == ANY_NAME:
                any_name = True
                continue
            name = _split(text.lower(), None)
            if name is None:
                raise InputError(
                    f"--allowed-host {_shown(text)} is not a host name: give NAME or NAME:PORT "
                    "(a DNS name or an address, no scheme or path)"
                )
            allowed.append(_Name(*name))
    if any_name and not tokens:
        raise InputError(
            "--allowed-host '*' lets any web page's name through (DNS rebinding): "
            "it needs --token-file, or give the names clients use"
        )
    return ServedNames(tuple(allowed), any_name)


class HostGuard:
    """ASGI middleware: a request that does not name this server is 421, one from another origin 403."""

    def __init__(self, app: ASGIApp, names: ServedNames) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # the lifespan: no request to check
            await self.app(scope, receive, send)
            return
        refusal = self.names.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message = refusal
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        body = json.dumps({"detail": message}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _split(authority: str, default_port: int | None) -> tuple[str, int | None] | None:
    """``host[:port]`` as its host (lower case, an IPv6 address in brackets) and port; None if malformed."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        host, bracket, rest = authority.partition("]")
        host += bracket
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    elif authority.count(":") > 1:  # a bare IPv6 address, as --allowed-host may name it
        host, port_text = authority, None
    else:
        host, colon, port_text_found = authority.partition(":")
        port_text = port_text_found if colon else None
    if host.startswith("[") or ":" in host:
        if not _is_ip(host.strip("[]")):
            return None
    elif not (_is_ip(host) or _DNS_NAME.fullmatch(host)):
        return None
    host = _address(host)
    if port_text is None:
        return host, default_port
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return host, int(port_text)


def _address(host: str) -> str:
    """`host` as a Host header names it: an IPv6 address in brackets (an IPv4-mapped one as IPv4)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else f"[{address}]"
    return str(address)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _shown(value: str) -> str:
    """A name from a request or an option, quoted for a one-line message."""
    shown = printable(value).replace("\n", "\\n").replace("\t", "\\t")
    return repr(shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 1] + "…")

"""Which agent a connection to `ratchet mcp` acts as, and the HTTP transport's bearer tokens.

- Over stdio, a connection acts as ``--agent`` (None without it: it acts as no agent).
- Over HTTP, each request carries ``Authorization: Bearer TOKEN``; the token
  file says which agent each token acts as. Without a token file (allowed on a
  loopback address only) every connection acts as ``--agent``.

The token file holds one token a line: ``AGENT_ID TOKEN`` (the token acts as
that agent) or a bare ``TOKEN`` (it acts as ``--agent``, or as no agent).
Blank lines and lines starting with ``#`` are skipped. Tokens are compared as
SHA-256 digests and never printed, not even in an error.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import InputError
from .state_server import StateServer

__all__ = ["AGENT_SCOPE_KEY", "TokenGate", "Tokens", "caller", "is_loopback", "load_tokens"]

AGENT_SCOPE_KEY = "ratchet.mcp.agent"
"""Where `TokenGate` leaves the agent of a request's token, in its ASGI scope."""


def caller(ctx: Context[Any, Any]) -> str | None:
    """The agent id the connection making this request acts as; None when it acts as no agent.

    Over HTTP with a token file: the agent of the request's bearer token (a bare
    token: ``--agent``). Otherwise ``--agent``.
    """
    server = ctx.mcp_server
    default = server.agent if isinstance(server, StateServer) else None
    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        named = scope.get(AGENT_SCOPE_KEY)
        if isinstance(named, str):
            return named
    return default


def is_loopback(host: str) -> bool:
    """Whether `host` is an address only this machine can reach (``localhost`` included)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Tokens:
    """The tokens of a token file: each token's digest, and the agent it acts as (None: ``--agent``)."""

    agents: dict[str, str | None]

    def agent_for(self, token: str) -> tuple[bool, str | None]:
        """Whether `token` is known, and the agent it acts as."""
        digest = _digest(token)
        return digest in self.agents, self.agents.get(digest)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def load_tokens(path: Path) -> Tokens:
    """Read a token file (see the module's docstring).

    Raises:
        InputError: the file cannot be read, a line has more than two words, a
            token is given twice, or it holds no token.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(f"cannot read the token file {str(path)!r} ({reason})") from None
    agents: dict[str, str | None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) > 2:
            raise InputError(
                f"line {number} of the token file {str(path)!r} has {len(words)} words; "
                "write AGENT_ID TOKEN, or a bare TOKEN"
            )
        agent, token = (None, words[0]) if len(words) == 1 else (words[0], words[1])
        digest = _digest(token)
        if digest in agents:
            raise InputError(f"line {number} of the token file {str(path)!r} repeats a token given above")
        agents[digest] = agent
    if not agents:
        raise InputError(f"the token file {str(path)!r} holds no token; write AGENT_ID TOKEN, one a line")
    return Tokens(agents)


class TokenGate:
    """ASGI middleware: every HTTP request needs a bearer token of the file, else 401.

    The token's agent is left in the request's scope (`AGENT_SCOPE_KEY`) for `caller`.
    """

    def __init__(self, app: ASGIApp, tokens: Tokens) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: no request to check
            await self.app(scope, receive, send)
            return
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        known, agent = self.tokens.agent_for(token.strip()) if scheme.lower() == "bearer" else (False, None)
        if not known:
            await _refuse(send)
            return
        if agent is not None:
            scope[AGENT_SCOPE_KEY] = agent
        await self.app(scope, receive, send)


async def _refuse(send: Send) -> None:
    body = json.dumps(
        {
            "error": "invalid_token",
            "error_description": "a valid bearer token of the server's token file is needed",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer error="invalid_token"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

"""Which agent a connection to `ratchet mcp` acts as, and the HTTP transport's bearer tokens.

- Over stdio, a connection acts as ``--agent`` (None without it: it acts as no agent).
- Over HTTP, each request carries ``Authorization: Bearer TOKEN``; the token
  file says which agent each token acts as. Without a token file (allowed on a
  loopback address only) every connection acts as ``--agent``.

The token file (read by `ratchet.trust.tokens`, which `ratchet serve` shares) holds
one token a line: ``AGENT_ID TOKEN`` (the token acts as that agent) or a bare
``TOKEN`` (it acts as ``--agent``, or as no agent).
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ..trust.tokens import CHALLENGE, REFUSAL, Tokens, is_loopback, load_tokens
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
        known, agent = self.tokens.check(Headers(scope=scope).get("authorization", ""))
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
            "error_description": REFUSAL,
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", CHALLENGE.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

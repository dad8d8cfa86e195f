"""What every request passes before it reaches the API: its token, its site, its size.

An ASGI middleware (plain ASGI, so it also covers the routes other modules
mount, such as the live streams and /metrics):

- with a token file, every request needs ``Authorization: Bearer TOKEN`` of
  that file, else 401 (`ratchet.trust.tokens` reads the file, as for `ratchet mcp`),
  except the requests `public` names: the dashboard's page shell and assets,
  which hold no data (a browser's navigation cannot send the header);
- a request that changes state (any method but GET, HEAD and OPTIONS) must
  say ``Content-Type: application/json``, and must not come from another site:
  a browser marks a cross-site request with ``Sec-Fetch-Site: cross-site`` (or
  ``same-site``), refused with 403 (an ``Origin`` other than the server's own
  is refused before, for every request: `ratchet.trust.hosts`, which `create_app`
  puts in front of this guard). A page of another site cannot send a JSON
  request without a CORS preflight, which this server never grants;
- a body larger than the limit is refused with 413 before the API reads it;
  a body with ``NaN`` or ``Infinity`` (which Python's JSON reader accepts
  and JSON does not have) is refused with 422 rather than stored as null.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..trust.tokens import CHALLENGE, REFUSAL, Tokens

__all__ = ["DEFAULT_MAX_BODY_BYTES", "RequestGuard"]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_SITE = frozenset({"same-origin", "none"})


class RequestGuard:
    """ASGI middleware: bearer token, cross-site refusal and body size (see the module's docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: Tokens | None,
        max_body_bytes: int,
        public: Callable[[str, str], bool] = lambda method, path: False,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.max_body_bytes = max_body_bytes
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: no request to check
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        if scope["method"] in _SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        body = await self._read_body(headers, receive)
        if body is None:
            await _answer(send, 413, f"the request body is larger than {self.max_body_bytes} bytes")
            return
        problem = _json_problem(b"".join(message.get("body", b"") for message in body))
        if problem is not None:
            await _answer(send, 422, problem)
            return
        await self.app(scope, _replay(body, receive), send)

    def _refusal(self, scope: Scope, headers: Headers) -> tuple[int, str, dict[str, str]] | None:
        if self.tokens is not None and not self.public(scope["method"], scope["path"]):
            known, _ = self.tokens.check(headers.get("authorization", ""))
            if not known:
                return 401, f"{REFUSAL} (Authorization: Bearer TOKEN)", {"www-authenticate": CHALLENGE}
        if scope["method"] in _SAFE_METHODS:
            return None
        site = headers.get("sec-fetch-site")
        if site is not None and site.lower() not in _SAME_SITE:
            return 403, f"refused a {site} request: change state from this server's own page or a client", {}
        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            return 415, "a request that changes state must send Content-Type: application/json", {}
        return None

    async def _read_body(self, headers: Headers, receive: Receive) -> list[Message] | None:
        """The request's body messages, or None once it is larger than the limit."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages  # the client went away: let the app see it
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                return None
            if not message.get("more_body", False):
                return messages


class _NotFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotFinite(text)
    return value


def _json_problem(body: bytes) -> str | None:
    """What makes `body` JSON the API must not take: NaN, an infinite number, nesting past Python's
    limit, a lone surrogate (``"\\ud800"``: no store can keep it).

    Other bad JSON (or no body) is the API's to answer.
    """
    try:
        value = json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotFinite:
        return "the body holds NaN or Infinity, which JSON does not have"
    except RecursionError:
        return "the body's JSON is nested too deeply"
    except ValueError:  # not JSON, or not UTF-8: the API says so
        return None
    if b"\\u" in body:  # only an escape can spell half a surrogate pair, which no text can hold
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError as error:
            lone = f"\\u{ord(error.object[error.start]):04x}"
            return f"the body holds a lone surrogate ({lone}), which is not Unicode text"
    return None


def _replay(messages: list[Message], server_receive: Receive) -> Receive:
    """A `receive` that gives the app the body read already, then what the server sends next."""
    pending = list(messages)

    async def receive() -> Message:
        return pending.pop(0) if pending else await server_receive()

    return receive


async def _answer(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((key.encode(), value.encode()) for key, value in (headers or {}).items()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

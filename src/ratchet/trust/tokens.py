"""Bearer-token files and loopback addresses, shared by `ratchet mcp` and `ratchet serve`.

A server that listens on an address other machines can reach needs a token
file; each request then carries ``Authorization: Bearer TOKEN``.

The token file holds one token a line: ``AGENT_ID TOKEN`` (the token acts as
that agent, where the server has agents: `ratchet mcp`) or a bare ``TOKEN``.
Blank lines and lines starting with ``#`` are skipped. Tokens are compared as
SHA-256 digests and never printed, not even in an error.

No server library is imported here, so both servers (and their CLI commands,
before their extras load) read the file the same way.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["CHALLENGE", "REFUSAL", "Tokens", "bearer_token", "is_loopback", "load_tokens"]

REFUSAL = "a valid bearer token of the server's token file is needed"
"""What both servers answer (401) to a request without a known token."""
CHALLENGE = 'Bearer error="invalid_token"'
"""The ``WWW-Authenticate`` header both servers send with that answer."""


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
    """The tokens of a token file: each token's digest, and the agent it acts as (None: no agent named)."""

    agents: dict[str, str | None]

    def agent_for(self, token: str) -> tuple[bool, str | None]:
        """Whether `token` is known, and the agent it acts as."""
        digest = _digest(token)
        # Compared in constant time against each: how long a refusal takes tells nothing of a token.
        known = any(hmac.compare_digest(digest, held) for held in self.agents)
        return known, self.agents.get(digest) if known else None

    def check(self, authorization: str) -> tuple[bool, str | None]:
        """Whether an ``Authorization`` header's value carries a known bearer token, and the agent it
        acts as: the one check both servers make of every request."""
        token = bearer_token(authorization)
        return (False, None) if token is None else self.agent_for(token)


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header's value; None for any other scheme."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


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

"""Store URLs as people see them: never a password, in whatever form the URL carries it.

A PostgreSQL store URL may hold a password three ways: ``user:PASSWORD@host``,
``?password=PASSWORD`` (or ``sslpassword=``), and ``password=PASSWORD`` in a
libpq key=value string. Every message, log line and command Ratchet prints
that shows a store URL shows `redact_url` of it; a message that quotes a
library's words about the URL passes through `hide_secrets` as well, since
those may quote the URL raw. Both work on malformed URLs too (they only cut
strings, never parse).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = ["HIDDEN", "hide_secrets", "redact_url", "secrets_of"]

HIDDEN = "***"
_SECRET_KEYS = {"password", "sslpassword"}
# password=VALUE in a key=value string; VALUE is 'quoted' (backslash escapes) or runs to a space.
_KEY_VALUE = re.compile(r"(?<![\w])((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """`url` with every password in it replaced by ``***``: how a store URL is shown to people."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _KEY_VALUE.sub(lambda m: m.group(1) + HIDDEN, url)
    before_query, question, query = rest.partition("?")
    credentials, at, host = before_query.rpartition("@")
    if at and ":" in credentials:
        before_query = f"{credentials.partition(':')[0]}:{HIDDEN}@{host}"
    if question:
        query = "&".join(
            f"{item.partition('=')[0]}={HIDDEN}" if _is_secret(item) else item for item in query.split("&")
        )
    return f"{scheme}{sep}{before_query}{question}{query}"


def secrets_of(url: str) -> list[str]:
    """Every password `url` holds, as written and decoded (what `hide_secrets` hides)."""
    found: list[str] = []
    _, sep, rest = url.partition("://")
    if not sep:
        for match in _KEY_VALUE.finditer(url):
            value = match.group(2)
            found += [value, value.strip("'").replace("\\'", "'").replace("\\\\", "\\")]
    else:
        before_query, _, query = rest.partition("?")
        credentials, at, _ = before_query.rpartition("@")
        if at and ":" in credentials:
            found.append(credentials.partition(":")[2])
        found += [item.partition("=")[2] for item in query.split("&") if _is_secret(item)]
    return sorted(
        {form for value in found for form in (value, unquote(value)) if form}, key=len, reverse=True
    )


def hide_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` (a library's message about a URL) with each of `secrets` replaced by ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


def _is_secret(item: str) -> bool:
    return unquote(item.partition("=")[0]).strip().lower() in _SECRET_KEYS

"""Store URLs as people see them: never a password, in whatever form the URL carries it.

A PostgreSQL store URL may hold a password three ways: ``user:PASSWORD@host``,
``?password=PASSWORD`` (or ``sslpassword=``), and ``password=PASSWORD`` in a
libpq key=value string; an option whose value is itself a URL (``?read_url=``,
percent-encoded) may hold one in any of those forms. Every message, log line and command Ratchet prints
that shows a store URL shows `redact_url` of it; a message that quotes a
library's words about the URL passes through `hide_secrets` as well, since
those may quote the URL raw. Both work on malformed URLs too (they only cut
strings, never parse). A URL nested in the options ``?listen_url=`` and ``?read_url=`` (a
percent-encoded PostgreSQL URL) has its password hidden the same ways.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, unquote

__all__ = ["HIDDEN", "hide_secrets", "redact_url", "secrets_of"]

HIDDEN = "***"
_SECRET_KEYS = {"password", "sslpassword"}
_NESTED_KEYS = {"listen_url", "read_url"}  # options whose value is a URL of its own
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
        query = "&".join(_redact_item(item) for item in query.split("&"))
    return f"{scheme}{sep}{before_query}{question}{query}"


def _redact_item(item: str) -> str:
    key, _, value = item.partition("=")
    if _is_secret(item):
        return f"{key}={HIDDEN}"
    if _is_nested(item):
        return f"{key}={quote(redact_url(unquote(value)), safe=':/@*,')}"
    return item


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
        for item in query.split("&"):
            if _is_nested(item):
                nested = unquote(item.partition("=")[2])
                found += [form for secret in secrets_of(nested) for form in (secret, quote(secret, safe=""))]
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


def _is_nested(item: str) -> bool:
    return unquote(item.partition("=")[0]).strip().lower() in _NESTED_KEYS

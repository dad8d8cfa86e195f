"""A provider's HTTP failures as `ModelError`: retryable per status, with the wait asked for.

Both SDKs hand over the status, the body and the headers of an error answer;
what they mean is the same for both APIs. A streamed answer that stops
midway (`stream_cut`) is a failure with no status, as a dropped connection is.
"""

from __future__ import annotations

import email.utils
import math
import os
import re
import time
from collections.abc import Mapping

from .base import ModelError

__all__ = [
    "connection_error",
    "error_detail",
    "http_error",
    "one_line",
    "retry_after_seconds",
    "stream_cut",
]


_CONTEXT_OVERFLOW = re.compile(
    r"context[_ ]length|context window|context size|maximum context|too many tokens|"
    r"prompt is too long",
    re.IGNORECASE,
)
_NO_MODEL = re.compile(r"model.*(does not exist|not found|not_found)", re.IGNORECASE)


def http_error(
    model: str, status: int, body: object, fallback: str, headers: Mapping[str, str]
) -> ModelError:
    """The `ModelError` for an HTTP error answer, retryable per its status.

    A prompt longer than the model's context is never retryable, whatever the
    status a server picks for it (a rate limit, 429, may mention tokens too).
    """
    detail = error_detail(body, fallback)
    code = body.get("code") if isinstance(body, Mapping) else None
    overflow = code == "context_length_exceeded" or _CONTEXT_OVERFLOW.search(detail)
    if overflow and status not in (408, 429):
        return ModelError(
            f"{model}: HTTP {status}: the prompt does not fit the model's context: {detail}",
            status=status,
            retryable=False,
        )
    if status == 404 and (code == "model_not_found" or _NO_MODEL.search(detail)):
        _, _, name = model.partition(":")
        return ModelError(
            f"{model}: the server has no model {name!r} (HTTP 404: {detail}); check the model name",
            status=status,
            retryable=False,
        )
    return ModelError.from_status(status, f"{model}: HTTP {status}: {detail}", retry_after_seconds(headers))


def connection_error(model: str, base_url: str, exc: BaseException) -> ModelError:
    """The retryable `ModelError` for a request that got no HTTP answer.

    The cause named is the operating system's ("Connection refused", "Name or
    service not known") when one lies under the SDK's and httpx's wrappers.
    """
    cause = exc.__cause__ or exc.__context__
    reason = one_line(str(cause)) if cause is not None and str(cause) else one_line(str(exc))
    system = _system_cause(exc)
    if system and system not in reason:
        reason = f"{system} ({reason})"
    return ModelError.from_status(None, f"{model}: cannot reach {base_url}: {reason}")


def stream_cut(model: str, where: str, detail: str) -> ModelError:
    """The retryable `ModelError` for a streamed answer that stopped midway.

    The pieces already handed on are not an answer: the call is tried again
    whole, as after a dropped connection (no status).

    Args:
        model: the provider's name; where: the server; detail: how it stopped.
    """
    return ModelError.from_status(
        None, f"{model}: the answer streamed from {where} was cut off midway: {detail}"
    )


def _system_cause(exc: BaseException) -> str | None:
    """The deepest operating-system error under `exc` (a refused connection, an unknown host)."""
    found: str | None = None
    seen: BaseException | None = exc
    for _ in range(12):
        if seen is None:
            break
        if isinstance(seen, OSError) and isinstance(seen.errno, int):
            # asyncio's refusal says "Connect call failed (...)"; the errno's own name is clearer.
            found = os.strerror(seen.errno) if seen.errno > 0 else seen.strerror
        seen = seen.__cause__ or seen.__context__
    return found


def error_detail(body: object, fallback: str) -> str:
    """What an error answer says went wrong, in one line.

    Both SDKs hand over either the whole JSON body or its ``error`` member;
    both APIs put the text in ``error.message``.
    """
    inner = body.get("error", body) if isinstance(body, Mapping) else body
    if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
        text = inner["message"]
    elif isinstance(inner, str) and inner.strip():
        text = inner
    else:
        text = fallback
    return one_line(text)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a provider asked for: ``retry-after-ms``, or ``retry-after`` in seconds or as a date."""
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        return max(0.0, seconds) if math.isfinite(seconds) else None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

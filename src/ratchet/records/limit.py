"""`Limit`: a rate or concurrency limit every worker honours, kept in the store by its key.

A key names what is limited: a model (``openai:gpt-4o``), the prefix of
model strings (an endpoint of ``ratchet.toml``, ``gpu``, or a provider,
``openai``), or a queue (``queue:NAME``). A model call is held to the
limits of its model and of its prefix (docs/rate-limits.md); a queue's
limit holds the tasks that run in it.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import Field

from ..errors import InputError
from ..limits import MAX_COUNT
from .base import NonEmpty, Record

__all__ = ["QUEUE_PREFIX", "Limit", "check_limit_key", "check_queue_name", "limit_keys_of"]

QUEUE_PREFIX = "queue:"
MAX_KEY_CHARS = 200
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
_QUEUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*")


def check_queue_name(name: str, what: str = "the queue") -> None:
    """Refuse a queue's (or a partition's) name that is empty, too long or not a plain word.

    Raises:
        InputError: it is; the message names it as `what` does.
    """
    if not _QUEUE.fullmatch(name) or len(name) > MAX_KEY_CHARS:
        raise InputError(
            f"{what} {name!r} is not a name: use letters, digits and _ . - / "
            f"(at most {MAX_KEY_CHARS} characters), e.g. emails"
        )


def check_limit_key(key: str) -> None:
    """Refuse a key that is neither ``queue:NAME``, ``prefix:model`` nor a bare prefix.

    Raises:
        InputError: it is neither; the message says what a key looks like.
    """
    if key.startswith(QUEUE_PREFIX):
        check_queue_name(key.removeprefix(QUEUE_PREFIX), "the queue of the key")
        return
    prefix, colon, model = key.partition(":")
    if (
        not _PREFIX.fullmatch(prefix)
        or len(key) > MAX_KEY_CHARS
        or (colon and (not model.strip() or any(c.isspace() or not c.isprintable() for c in model)))
    ):
        raise InputError(
            f"limit key {key!r} is not a model (openai:gpt-4o), an endpoint or provider (gpu), "
            "or a queue (queue:NAME)"
        )


def limit_keys_of(model: str) -> tuple[str, ...]:
    """The keys whose limits a call to `model` takes its turn against: the model, then its prefix."""
    prefix, colon, _ = model.partition(":")
    return (model, prefix) if colon and prefix else (model,)


class Limit(Record):
    """The limits kept for one key, and what the store last made of them.

    ``rpm``, ``tpm`` and ``concurrency`` are what a person set (None: not
    limited that way). The rest is the store's: when the key's next request
    and next token may go (its pacing, store/ops/limits.py), and
    ``blocked_until``, the end of the last ``Retry-After`` a provider
    answered a call of this key with, kept so that every worker waits it
    out (a key may have only that).
    """

    key: NonEmpty
    rpm: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    tpm: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    concurrency: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    blocked_until: dt.datetime | None = None
    next_request_at: dt.datetime | None = None
    next_token_at: dt.datetime | None = None

    def model_post_init(self, __context: Any) -> None:
        check_limit_key(self.key)
        if self.is_queue and (self.rpm is not None or self.tpm is not None):
            raise InputError(
                f"{self.key} takes --concurrency only: a queue caps the tasks running in it; "
                "put a rate limit on the model or endpoint its tasks call"
            )

    @property
    def is_queue(self) -> bool:
        return self.key.startswith(QUEUE_PREFIX)

    @property
    def is_set(self) -> bool:
        """Whether a person set any limit on the key (not only a provider's Retry-After)."""
        return self.rpm is not None or self.tpm is not None or self.concurrency is not None

    def describe(self) -> str:
        """``rpm 60, tpm 100000, concurrency 4`` as ``ratchet limit list`` prints it."""
        parts = [
            f"{name} {value}"
            for name, value in (("rpm", self.rpm), ("tpm", self.tpm), ("concurrency", self.concurrency))
            if value is not None
        ]
        return ", ".join(parts) or "-"

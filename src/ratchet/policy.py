"""Policies a task runs under: retries, budgets, checkpoints, and durations as people write them."""

from __future__ import annotations

import random
import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from .errors import InputError, NonRetryableError
from .limits import MAX_INLINE_RESULT_BYTES

__all__ = [
    "MAX_DURATION",
    "Budget",
    "CheckpointPolicy",
    "CheckpointStrategy",
    "RetryPolicy",
    "is_duration",
    "parse_duration",
    "positive_duration",
]


class Budget(BaseModel):
    """Limits on what one task may spend. ``None`` means no limit.

    Attributes:
        max_steps: plan steps the task may run.
        max_wall_time: seconds from the task's start to its end.
        max_llm_tokens: prompt plus completion tokens over all model calls.
        max_cost: money spent on model calls, in US dollars, as priced by
            `ratchet.pricing` (a call with no known price counts 0; docs/limits.md).
        max_artifact_bytes_in_context: tool output larger than this becomes an
            artifact whose summary, not its body, enters the prompt.
        max_inline_result_bytes: a tool result larger than this (as UTF-8
            text, or as JSON) is kept once, as an artifact, and the journal
            holds a reference to it; replay reads it back.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int | None = Field(default=None, ge=1)
    max_wall_time: float | None = Field(default=None, gt=0)
    max_llm_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0)
    max_artifact_bytes_in_context: int = Field(default=8000, ge=1)
    max_inline_result_bytes: int = Field(default=MAX_INLINE_RESULT_BYTES, ge=1)


class RetryPolicy(BaseModel):
    """How a failed call is tried again; the field names are Temporal's.

    The wait before attempt ``n + 1`` is ``initial_interval *
    backoff_coefficient ** (n - 1)``, capped at ``maximum_interval`` (100 x the
    initial interval when not given), stretched to a provider's Retry-After
    when that is longer, and spread by up to ``jitter`` of itself.
    ``maximum_attempts`` counts the first attempt; 0 means no limit. Unlike
    Temporal's default (no limit), Ratchet's default is 3: a tool with side
    effects should not be hammered forever.

    Errors whose class (or a base class) is named in
    ``non_retryable_error_types``, and `NonRetryableError`, fail at once.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    initial_interval: float = Field(default=1.0, gt=0)
    backoff_coefficient: float = Field(default=2.0, ge=1)
    maximum_interval: float | None = Field(default=None, gt=0)
    maximum_attempts: int = Field(default=3, ge=0)
    non_retryable_error_types: tuple[str, ...] = ()
    jitter: float = Field(default=0.0, ge=0, le=1)

    def delay(self, failed_attempt: int, *, retry_after: float | None = None) -> float:
        """Seconds to wait after attempt `failed_attempt` (from 1) failed."""
        cap = self.maximum_interval or self.initial_interval * 100
        wait = min(self.initial_interval * self.backoff_coefficient ** (failed_attempt - 1), cap)
        if retry_after is not None:
            wait = max(wait, retry_after)
        if self.jitter:
            wait += wait * self.jitter * random.random()
        return wait

    def allows_another(self, failed_attempt: int) -> bool:
        return self.maximum_attempts == 0 or failed_attempt < self.maximum_attempts

    def is_retryable(self, error: BaseException) -> bool:
        if isinstance(error, NonRetryableError) or getattr(error, "retryable", True) is False:
            return False
        names = {cls.__name__ for cls in type(error).__mro__}
        return not names.intersection(self.non_retryable_error_types)


class CheckpointStrategy(StrEnum):
    EVERY_STEP = "every_step"
    EVERY_ITERATION = "every_iteration"
    ON_STATE_CHANGE = "on_state_change"


class CheckpointPolicy(BaseModel):
    """When a workflow writes checkpoints, and which ones `resume` trusts.

    Attributes:
        strategy: ``every_step`` (when a step ends; the default),
            ``every_iteration`` (also before each model call after the first),
            or ``on_state_change`` (also when a StatePatch is applied).
        max_age: seconds; resuming a task whose newest checkpoint is older is
            refused (the world may have moved on), unless forced.
        keep: rotation keeps this many checkpoints per task (None: all).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: CheckpointStrategy = CheckpointStrategy.EVERY_STEP
    max_age: float | None = Field(default=None, gt=0)
    keep: int | None = Field(default=None, ge=1)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}

MAX_DURATION = 36500 * 86400.0
"""The longest duration people may write: 100 years (36500d). Any time that far
ahead is still a date Python and the stores can hold; "no limit" is said by
giving none."""


def is_duration(text: str) -> bool:
    """Whether `text` is written as a duration (whatever its length)."""
    return _DURATION.match(text) is not None


def parse_duration(text: str) -> float:
    """Seconds in a duration written as ``90``, ``1.5s``, ``10m``, ``2h``, ``7d`` or ``1w``.

    Raises:
        InputError: the text is not such a duration, or is longer than `MAX_DURATION`.
    """
    match = _DURATION.match(text)
    if not match:
        raise InputError(f"{text!r} is not a duration; write e.g. 30s, 10m, 2h or 7d")
    seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
    if seconds > MAX_DURATION:
        raise InputError(f"{text.strip()!r} is too long; a duration is at most 36500d (100 years)")
    return seconds


def positive_duration(option: str, text: str | None) -> float | None:
    """The seconds a duration option (`option`, named in errors) gives, or None without it.

    Raises:
        InputError: `text` is not a duration (up to 100 years), or is no time at all.
    """
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except InputError as error:
        raise InputError(f"{option}: {error.message}") from None
    if seconds <= 0:
        raise InputError(f"{option}: {text!r} leaves no time; write e.g. 30s, 10m or 2h")
    return seconds

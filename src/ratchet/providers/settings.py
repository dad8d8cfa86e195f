"""Model settings: how a model answers (its temperature, its longest answer, its seed, its reasoning effort).

An agent sets them for all its requests (``Agent(model_settings=...)``,
``ratchet run --temperature ...``); a workflow for one request
(``ModelRequest.settings``). They are part of the request, so the journal
records them with it and a replay sees what was asked.

Each provider sends them under its API's own names (docs/providers.md, "Model
settings") and refuses, in one line and before any network call, a setting its
API has no way to send: `UnsupportedSetting`. A provider another package adds
(``ratchet.register_provider``) gets them in the request and may read them;
without a ``check_settings`` method it is never asked whether it can.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import ConfigDict, Field, JsonValue, ValidationError

from ratchet.errors import InputError
from ratchet.records import Record
from ratchet.validation import problems

__all__ = [
    "ModelSettings",
    "ReasoningEffort",
    "check_settings",
    "settings_from",
]

ReasoningEffort = Literal["low", "medium", "high"]

# Every API that takes a seed takes a signed 64-bit integer.
_SEED_BOUND = 2**63


class ModelSettings(Record):
    """How a model answers; a setting left None is the provider's (or the server's) default.

    Attributes:
        temperature: from 0 (the likeliest tokens) to 2 (the most varied).
        max_output_tokens: the most tokens one answer may take (not the
            task's token budget, ``Budget.max_llm_tokens``).
        seed: asks the server to sample the same way for the same request,
            where it can.
        reasoning_effort: how hard a reasoning model thinks before it
            answers: ``low``, ``medium`` or ``high``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_output_tokens: int | None = Field(default=None, ge=1, le=2**31 - 1)
    seed: int | None = Field(default=None, ge=-_SEED_BOUND, lt=_SEED_BOUND)
    reasoning_effort: ReasoningEffort | None = None

    def given(self) -> dict[str, JsonValue]:
        """The settings that are set, by name."""
        return self.model_dump(exclude_none=True)


def settings_from(
    values: Mapping[str, object], *, spelled: Mapping[str, str] | None = None
) -> ModelSettings | None:
    """The settings `values` give (None when they give none), checked.

    Args:
        values: the settings by name; None values are unset.
        spelled: how the input names each setting (``--temperature``), for the message.

    Raises:
        InputError: a value is out of its range or not a setting, in one line.
    """
    given = {name: value for name, value in values.items() if value is not None}
    if not given:
        return None
    try:
        return ModelSettings.model_validate(given)
    except ValidationError as error:
        first = error.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        if spelled and name in spelled:
            raise InputError(f"{spelled[name]} {given[name]}: {first['msg']}") from None
        raise InputError(f"model settings: {problems(error, whole='the settings')}") from None


def check_settings(provider: object, settings: ModelSettings | None) -> None:
    """Refuse `settings` if `provider` cannot send one of them (asked only of a provider that can say).

    Raises:
        UnsupportedSetting: the provider's API has no way to send one, in one
            line (`ratchet.providers.base`: both a `ModelError` and an `InputError`).
    """
    check = getattr(provider, "check_settings", None)
    if settings is not None and callable(check):
        check(settings)

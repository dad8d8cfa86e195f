"""Policies a task runs under: budgets now; retry, deadline and checkpoint policies join here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Budget"]


class Budget(BaseModel):
    """Limits on what one task may spend. ``None`` means no limit.

    Attributes:
        max_steps: plan steps the task may run.
        max_wall_time: seconds from the task's start to its end.
        max_llm_tokens: prompt plus completion tokens over all model calls.
        max_cost: money spent on model calls, in the provider's currency.
        max_artifact_bytes_in_context: tool output larger than this becomes an
            artifact whose summary, not its body, enters the prompt.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int | None = Field(default=None, ge=1)
    max_wall_time: float | None = Field(default=None, gt=0)
    max_llm_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0)
    max_artifact_bytes_in_context: int = Field(default=8000, ge=1)

"""A task's spending against its budget and deadline, checked at every operation boundary."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import BudgetExceeded, DeadlineExceeded
from ..records import Task, utcnow

__all__ = ["PRESSURE_AT", "BudgetTracker"]

PRESSURE_AT = 0.8


class BudgetTracker:
    """Counts tokens, cost and steps (replayed calls count too), and enforces the limits.

    A model call with no known price (its usage's cost is None) counts 0
    toward ``max_cost`` and is counted in `unpriced_calls` (docs/limits.md).
    `on_pressure` is awaited once, the first time any limit is 80 % used.
    """

    def __init__(self, task: Task, on_pressure: Callable[[str], Awaitable[None]]) -> None:
        self.task = task
        self.budget = task.budget
        self.llm_tokens = 0
        self.cost = 0.0
        self.unpriced_calls = 0
        self.steps = 0
        self._unpriced_models: set[str] = set()
        self._on_pressure = on_pressure
        self._pressure_reported = "budget_pressure" in task.state.risk_flags
        budget = self.budget
        self._limited = task.deadline is not None or any(
            limit is not None
            for limit in (budget.max_steps, budget.max_llm_tokens, budget.max_cost, budget.max_wall_time)
        )

    def count_usage(self, usage: Any, unpriced_model: Any = None) -> None:
        """Count one call's usage (a dict, as journaled); `unpriced_model` names a model with no price."""
        if isinstance(usage, dict):
            self.llm_tokens += int(usage.get("prompt_tokens", 0))
            self.llm_tokens += int(usage.get("completion_tokens", 0))
            cost = usage.get("cost")
            if cost is None:
                self.unpriced_calls += 1
            else:
                self.cost += float(cost)
        if isinstance(unpriced_model, str):
            self._unpriced_models.add(unpriced_model)

    def first_unpriced(self, model: str) -> bool:
        """Whether this is the task's first call to `model` with no price (replayed calls included)."""
        first = model not in self._unpriced_models
        self._unpriced_models.add(model)
        return first

    @property
    def limited(self) -> bool:
        """Whether the task has a limit to check (a deadline, or a limit of its budget)."""
        return self._limited

    @property
    def pressed(self) -> bool:
        """Whether a limit has been 80 % used (the task's ``budget_pressure`` flag)."""
        return self._pressure_reported

    def count_step(self) -> None:
        self.steps += 1

    def _figures(self, now: dt.datetime) -> list[tuple[str, float, float | None, str]]:
        started = self.task.started_at or now
        return [
            ("max_steps", self.steps, self.budget.max_steps, ""),
            ("max_llm_tokens", self.llm_tokens, self.budget.max_llm_tokens, " tokens"),
            ("max_cost", self.cost, self.budget.max_cost, " USD"),
            ("max_wall_time", (now - started).total_seconds(), self.budget.max_wall_time, " s"),
        ]

    async def check(self) -> None:
        """Raise when a limit is reached; report pressure at 80 %.

        Raises:
            DeadlineExceeded: the task's deadline has passed.
            BudgetExceeded: a limit is used up (for steps: more steps were
                started than allowed), naming the limit and the figure.
        """
        if not self._limited:
            return
        now = utcnow()
        deadline = self.task.deadline
        if deadline is not None and now >= deadline:
            raise DeadlineExceeded(
                f"deadline exceeded (the task's deadline was {deadline:%Y-%m-%d %H:%M:%S} UTC)"
            )
        pressed = None
        for name, used, limit, unit in self._figures(now):
            if limit is None:
                continue
            if used > limit if name == "max_steps" else used >= limit:
                raise BudgetExceeded(f"budget exceeded ({name}: {used:g}{unit} of {limit:g}{unit})")
            if used >= PRESSURE_AT * limit and pressed is None:
                pressed = f"{name}: {used:g}{unit} of {limit:g}{unit}"
        if pressed is not None and not self._pressure_reported:
            self._pressure_reported = True
            await self._on_pressure(pressed)

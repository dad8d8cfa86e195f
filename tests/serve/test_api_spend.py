"""The HTTP API's task record and budget say what a task's model calls cost, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import genai_prices  # noqa: F401  # the `prices` extra (in `test`): fails, never skips, without it
import httpx
import pytest

from ratchet import Agent, Budget, TaskStatus
from ratchet.pricing import cost_of
from ratchet.providers import Usage
from ratchet.runtime import Runtime

from ..helpers.scripts import plan, say, verdict

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}


async def test_the_task_record_and_its_budget_report_the_cost(
    api: httpx.AsyncClient, api_rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script(
        {
            "priced_as": "openai:gpt-4o",
            "plan": [{**plan("only"), "usage": USAGE}],
            "act": [{**say("done"), "usage": USAGE}],
            "verify": [{**verdict(True), "usage": USAGE}],
        }
    )
    agent = Agent("priced", "You answer.", model=model, budget=Budget(max_cost=1.0))
    task = await api_rt.run(agent, instruction="say done")
    assert task.status is TaskStatus.COMPLETED, task.error
    one = cost_of("openai", "gpt-4o", Usage.model_validate(USAGE))
    assert one is not None

    spend = (await api.get(f"/api/tasks/{task.id}")).json()["spend"]
    assert spend == {
        "llm_tokens": 4500,
        "cost": pytest.approx(3 * one),
        "unpriced_calls": 0,
        "max_cost": 1.0,
        "cost_left": pytest.approx(1 - 3 * one),
    }
    budget = (await api.get(f"/api/tasks/{task.id}/budget")).json()
    assert budget["used"]["cost"] == pytest.approx(3 * one)
    assert budget["used"]["unpriced_calls"] == 0
    assert budget["left"]["cost"] == pytest.approx(1 - 3 * one)


async def test_costs_totals_the_calls_by_day_agent_and_model(
    api: httpx.AsyncClient, api_rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script(
        {
            "priced_as": "openai:gpt-4o",
            "plan": [{**plan("only"), "usage": USAGE}],
            "act": [{**say("done"), "usage": USAGE}],
            "verify": [{**verdict(True), "usage": USAGE}],
        }
    )
    task = await api_rt.run(Agent("priced", "You answer.", model=model), instruction="say done")
    assert task.status is TaskStatus.COMPLETED, task.error
    one = cost_of("openai", "gpt-4o", Usage.model_validate(USAGE))
    assert one is not None

    report = (await api.get("/api/costs", params={"since": "1d", "by": ["agent"]})).json()
    assert report["by"] == ["agent"]
    assert report["rows"] == [
        {
            "agent": "priced",
            "calls": 3,
            "unpriced_calls": 0,
            "llm_tokens": 4500,
            "cost": pytest.approx(3 * one),
        }
    ]
    assert report["total"]["cost"] == pytest.approx(3 * one)
    whole = (await api.get("/api/costs")).json()
    assert [(row["agent"], row["model"]) for row in whole["rows"]] == [("priced", task.model)]
    assert (await api.get("/api/costs", params={"agent": "other"})).json()["rows"] == []

    bad = await api.get("/api/costs", params={"by": "week"})
    assert bad.status_code == 400
    assert bad.json()["detail"] == "by: 'week' is not a column; give day, agent or model"

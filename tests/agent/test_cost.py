"""Every model call records its cost from the price table; `max_cost` stops a task; unknown models cost null.

The scripted model declares token counts and the model they are billed as
(``priced_as``); the engine prices each live call once, from genai-prices'
bundled table, and the journal keeps the figure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import genai_prices  # noqa: F401  # the `prices` extra (in `test`): the table these tests price with
import pytest

from ratchet import Budget, Runtime, TaskStatus
from ratchet.pricing import cost_of
from ratchet.providers import Usage
from ratchet.records import OpKind, TaskFilter, WaitReason
from ratchet.store import StateStore
from ratchet.views.task import load_task_view

from ..helpers.scripts import calls, plan, say, verdict
from .support import event_kinds, events_of, make_agent, run_agent

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}
GPT_4O = "openai:gpt-4o"
UNKNOWN = "openai:no-such-model-anywhere"


def _priced(priced_as: str, steps: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "priced_as": priced_as,
        "plan": [{**plan(*(f"step {n}" for n in range(steps))), "usage": USAGE}],
        "act": [{**say("done"), "usage": USAGE} for _ in range(steps)],
        "verify": [{**verdict(True), "usage": USAGE} for _ in range(steps)],
        **extra,
    }


def _one_call() -> float:
    cost = cost_of("openai", "gpt-4o", Usage.model_validate(USAGE))
    assert cost is not None and cost > 0, "genai-prices knows gpt-4o"
    return cost


async def _model_costs(store: StateStore, task_id: str) -> list[Any]:
    ops = [op for op in await store.list_ops(task_id) if op.kind is OpKind.MODEL]
    return [op.meta["usage"]["cost"] for op in ops]


async def test_every_call_records_its_cost_and_the_view_adds_it_up(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(each_store), make_agent(script(_priced(GPT_4O))))

    assert task.status is TaskStatus.COMPLETED, task.error
    costs = await _model_costs(each_store, task.id)
    assert costs == [pytest.approx(_one_call())] * 5  # plan, then act and verify for each step
    model_ops = [op for op in await each_store.list_ops(task.id) if op.kind is OpKind.MODEL]
    assert all(op.output["usage"]["cost"] == op.meta["usage"]["cost"] for op in model_ops)
    async with each_store.reading() as tx:
        spend = (await load_task_view(tx, task.id)).spend
    assert (spend.cost, spend.unpriced_calls, spend.llm_tokens) == (pytest.approx(5 * _one_call()), 0, 7500)  # type: ignore[comparison-overlap]  # approx(x) equals x: mypy does not know
    assert "model_unpriced" not in await event_kinds(each_store, task.id)


async def test_a_task_keeps_what_it_spent_to_be_listed_and_filtered_by(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await run_agent(Runtime(each_store), make_agent(script(_priced(GPT_4O))))

    assert task.cost == pytest.approx(5 * _one_call())
    assert (await each_store.get_task(task.id)).cost == task.cost
    [row] = await each_store.list_task_rows(TaskFilter(min_cost=4 * _one_call()))
    assert (row.id, row.cost) == (task.id, task.cost)
    assert await each_store.count_task_rows(TaskFilter(max_cost=_one_call())) == 0


async def test_max_cost_fails_the_task_at_its_limit(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    limit = 2.5 * _one_call()  # the third call reaches it
    agent = make_agent(script(_priced(GPT_4O, steps=3)), budget=Budget(max_cost=limit))
    task = await run_agent(Runtime(each_store), agent)

    assert task.status is TaskStatus.FAILED
    assert "budget exceeded (max_cost" in (task.error or ""), task.error
    assert len(await _model_costs(each_store, task.id)) == 3
    assert "budget_pressure" in task.state.risk_flags
    async with each_store.reading() as tx:
        spend = (await load_task_view(tx, task.id)).spend
    assert spend.cost == pytest.approx(3 * _one_call())
    assert (spend.max_cost, spend.cost_left) == (limit, 0.0)


async def test_an_unknown_model_costs_null_says_so_once_and_counts_nothing_toward_max_cost(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(script(_priced(UNKNOWN)), budget=Budget(max_cost=0.000001))
    task = await run_agent(Runtime(each_store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert await _model_costs(each_store, task.id) == [None] * 5
    (warning,) = await events_of(each_store, task.id, "model_unpriced")
    assert warning.message == (f"no price is known for {UNKNOWN}; its cost is not counted toward max_cost")
    assert warning.severity == "warning"
    async with each_store.reading() as tx:
        spend = (await load_task_view(tx, task.id)).spend
    assert (spend.cost, spend.unpriced_calls) == (0.0, 5)


async def test_a_script_without_a_priced_model_costs_nothing_and_warns_not(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    content = _priced(GPT_4O)
    del content["priced_as"]
    task = await run_agent(Runtime(store), make_agent(script(content)))

    assert await _model_costs(store, task.id) == [0.0] * 5
    assert "model_unpriced" not in await event_kinds(store, task.id)


@pytest.mark.parametrize("later", [UNKNOWN, GPT_4O])
async def test_a_resumed_task_keeps_recorded_costs_and_warns_once(
    store: StateStore, script: Callable[[dict[str, Any]], str], later: str
) -> None:
    """Replayed calls are never priced again (a script now priced otherwise changes nothing in
    them), and the run that replays an unpriced call does not warn about its model again."""
    content = _priced(UNKNOWN, steps=1)
    content["act"] = [
        {**calls(("ask_user", {"question": "Which region?"})), "usage": USAGE},
        {**say("done"), "usage": USAGE},
    ]
    model = script(content)
    rt = Runtime(store)
    waiting = await run_agent(rt, make_agent(model))
    assert (waiting.status, waiting.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT), waiting.error
    assert await _model_costs(store, waiting.id) == [None, None]

    Path(model.removeprefix("scripted:")).write_text(json.dumps({**content, "priced_as": later}))
    await rt.answer(waiting.id, "eu-west-1")
    task = await rt.resume(waiting.id)

    assert task.status is TaskStatus.COMPLETED, task.error
    now = None if later == UNKNOWN else pytest.approx(_one_call())
    assert await _model_costs(store, task.id) == [None, None, now, now]
    assert len(await events_of(store, task.id, "model_unpriced")) == 1

"""Tasks side by side (`ratchet.views.compare`): runs of one scripted agent whose scripts differ in a call.

The CLI's and the API's tests check how they show a comparison; these check
what it says, on every kind of store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import genai_prices  # noqa: F401  # the `prices` extra (in `test`): the table these tests price with
import pytest

from ratchet import Runtime, Task, TaskStatus
from ratchet.errors import InputError, TaskNotFound
from ratchet.pricing import cost_of
from ratchet.providers import Usage
from ratchet.records import OpKind
from ratchet.store import StateStore
from ratchet.views.compare import MAX_COMPARED, comparison_json, load_comparison

from ..helpers.scripts import calls, plan, say, verdict
from .support import make_agent, run_agent

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}


def _script(*fix: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """Two steps: read X's status, then `fix`; every answer uses `USAGE`, priced as gpt-4o's."""
    return {
        "priced_as": "openai:gpt-4o",
        "plan": [{**plan("look at X", "fix X"), "usage": USAGE}],
        "act": [
            {**calls(("check_status", {"service": "X"})), "usage": USAGE},
            {**say("X is degraded"), "usage": USAGE},
            {**calls(*fix), "usage": USAGE},
            {**say("X fixed"), "usage": USAGE},
        ],
        "verify": [{**verdict(True), "usage": USAGE}, {**verdict(True), "usage": USAGE}],
    }


async def _run(store: StateStore, model: str) -> Task:
    task = await run_agent(Runtime(store), make_agent(model))
    assert task.status is TaskStatus.COMPLETED, task.error
    return task


async def _compare(store: StateStore, *task_ids: str) -> dict[str, Any]:
    async with store.reading() as tx:
        return comparison_json(await load_comparison(tx, task_ids))


async def test_two_runs_that_differ_in_one_tool_call_differ_there_and_nowhere_else(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    first = await _run(each_store, script(_script(("restart_service", {"service": "X"}))))
    second = await _run(each_store, script(_script(("restart_service", {"service": "Y"}))))

    shown = await _compare(each_store, first.id, second.id)

    rows = shown["tool_calls"]
    assert [(row["step"], row["position"], row["mark"]) for row in rows] == [
        (1, 1, "same"),
        (2, 1, "differs"),
    ]
    restarted = rows[1]["calls"]
    assert [call["name"] for call in restarted] == ["restart_service", "restart_service"]
    assert [call["arguments"] for call in restarted] == [{"service": "X"}, {"service": "Y"}]
    assert [call["result_preview"] for call in restarted] == ['{"restarted": "X"}', '{"restarted": "Y"}']
    assert [row["same"] for row in shown["steps"]] == [True, True]
    assert [[step["name"] for step in row["tasks"]] for row in shown["steps"]] == [
        ["look at X"] * 2,
        ["fix X"] * 2,
    ]
    # The journals part at the model call that asked for the other restart: every call before it is alike.
    ops = await each_store.list_ops(first.id)
    asked = next(op for op in ops if op.kind is OpKind.TOOL and op.name == "restart_service").seq - 1
    assert (shown["shared_prefix"], shown["parted_at_seq"]) == (asked, asked)
    one_call = cost_of("openai", "gpt-4o", Usage.model_validate(USAGE))
    assert one_call is not None and one_call > 0
    for side, task in zip(shown["tasks"], (first, second), strict=True):
        assert (side["task_id"], side["status"], side["result"]) == (task.id, "completed", "X fixed")
        assert (side["tokens_in"], side["tokens_out"], side["unpriced_calls"]) == (7000, 3500, 0)
        assert side["cost"] == pytest.approx(7 * one_call)
        assert side["wall_seconds"] is not None and side["wall_seconds"] >= 0
        assert side["started_at"] is not None and side["ended_at"] is not None
        assert side["models"] == [task.model]  # the scripted model names no other: the task's counts


async def test_three_runs_mark_a_call_only_some_made(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    restart_x = ("restart_service", {"service": "X"})
    tasks = [
        await _run(each_store, script(_script(restart_x))),
        await _run(each_store, script(_script(("restart_service", {"service": "Y"})))),
        await _run(each_store, script(_script(restart_x, ("check_status", {"service": "X"})))),
    ]

    shown = await _compare(each_store, *(task.id for task in tasks))

    rows = shown["tool_calls"]
    assert [(row["step"], row["position"], row["mark"], row["only_in"]) for row in rows] == [
        (1, 1, "same", []),
        (2, 1, "differs", []),
        (2, 2, "only in", [tasks[2].id]),
    ]
    assert [call is None for call in rows[2]["calls"]] == [True, True, False]
    assert [side["task_id"] for side in shown["tasks"]] == [task.id for task in tasks]


async def test_the_same_run_twice_is_alike_everywhere(
    each_store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script(_script(("restart_service", {"service": "X"})))
    first, second = await _run(each_store, model), await _run(each_store, model)

    shown = await _compare(each_store, first.id, second.id)

    assert {row["mark"] for row in shown["tool_calls"]} == {"same"}
    assert shown["parted_at_seq"] is None
    assert shown["shared_prefix"] == len(await each_store.list_ops(first.id))


@pytest.mark.parametrize(
    ("ids", "said"),
    [
        (["a"], "at least 2 task ids; 1 given"),
        (["a", "b", "a"], "task 'a' is given twice"),
        ([f"t{n}" for n in range(MAX_COMPARED + 1)], f"at most {MAX_COMPARED} task ids; 9 given"),
    ],
)
async def test_ids_it_cannot_compare_are_refused(store: StateStore, ids: list[str], said: str) -> None:
    with pytest.raises(InputError, match=said):
        async with store.reading() as tx:
            await load_comparison(tx, ids)


async def test_an_unknown_id_is_named(store: StateStore, script: Callable[[dict[str, Any]], str]) -> None:
    task = await _run(store, script(_script(("restart_service", {"service": "X"}))))

    with pytest.raises(TaskNotFound, match="no-such-task"):
        await _compare(store, task.id, "no-such-task")

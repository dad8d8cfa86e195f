"""`Runtime.fork` and `SyncRuntime.fork` with what-if overrides, on every store: a workflow's fork."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import ratchet
from ratchet import Budget, Runtime, SyncRuntime
from ratchet.errors import InputError
from ratchet.records import OpKind, TaskStatus


@ratchet.tool
def look_up(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 21}


@ratchet.workflow(tools=[look_up])
async def weather(ctx: ratchet.Context, city: str) -> Any:
    """Step 1 looks the city up; step 2 asks the model what to say of it."""
    async with ctx.step("look it up"):
        found = await ctx.call_tool("look_up", {"city": city})
    async with ctx.step("say it"):
        asked = [{"role": "user", "content": json.dumps(found)}]
        said = await ctx.call_model({"purpose": "act", "messages": asked})
    return said.content


async def test_a_workflows_fork_takes_another_model_a_tool_result_and_its_instruction(
    rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    warm, degrees = script({"act": [{"content": "Warm."}]}), script({"act": [{"content": "21 degrees."}]})
    task = await rt.run(weather, {"city": "Oslo"}, model=warm, instruction="tell me the weather")
    assert task.result == "Warm."

    new_id = await rt.fork(
        task.id,
        step=2,
        model=degrees,
        instructions="tell me the weather in words",
        tool_results={0: {"city": "Oslo", "celsius": -3}},
    )
    forked = await rt.resume(new_id)

    assert (forked.status, forked.result, forked.model) == (TaskStatus.COMPLETED, "21 degrees.", degrees)
    assert forked.instruction == "tell me the weather in words"
    looked, asked = await rt.store.list_ops(new_id)
    assert (looked.kind, looked.output) == (OpKind.TOOL, {"city": "Oslo", "celsius": -3})
    assert looked.meta["overridden"] == {"from": {"city": "Oslo", "celsius": 21}}
    assert json.loads(asked.input["messages"][0]["content"]) == {"city": "Oslo", "celsius": -3}
    assert (await rt.get_task(task.id)).result == "Warm."  # the original as it was


async def test_a_fork_with_another_model_names_it_alone(
    rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    refused = script({"act": [{"error": {"status": 401}}]})
    warm, degrees = script({"act": [{"content": "Warm."}]}), script({"act": [{"content": "21 degrees."}]})
    task = await rt.run(weather, {"city": "Oslo"}, model=[refused, warm])
    assert task.result == "Warm."  # answered by the fallback

    new_id = await rt.fork(task.id, step=2, model=degrees)
    forked = await rt.resume(new_id)

    assert (forked.result, forked.model, forked.fallback_models) == ("21 degrees.", degrees, [])
    [event] = await rt.store.list_events(new_id, kinds={"task_forked"})
    assert event.data["overrides"] == {"model": {"from": refused, "to": degrees, "dropped_fallbacks": [warm]}}


async def test_a_large_result_kept_as_an_artifact_is_overridden_too(
    rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    warm = script({"act": [{"content": "Warm."}]})
    task = await rt.run(weather, {"city": "Oslo"}, model=warm, budget=Budget(max_inline_result_bytes=8))
    [recorded, *_] = await rt.store.list_ops(task.id)
    assert recorded.output is None and "result_artifact" in recorded.meta  # set aside: too large

    new_id = await rt.fork(task.id, 1, tool_results={0: {"celsius": -3}})
    await rt.resume(new_id)

    looked, asked = await rt.store.list_ops(new_id)
    assert (looked.output, "result_artifact" in looked.meta) == ({"celsius": -3}, False)
    assert looked.meta["overridden"] == {"from": None, "artifact": recorded.meta["result_artifact"]}
    assert json.loads(asked.input["messages"][0]["content"]) == {"celsius": -3}


@pytest.mark.parametrize(
    ("point", "overrides", "said"),
    [
        ({}, {}, "give a checkpoint or a step"),
        ({"checkpoint": 1, "step": 1}, {}, "not both"),
        ({"step": 3}, {}, "no step 3 to fork from"),
        ({"checkpoint": 1}, {"tool_results": {5: 1}}, "no operation 5 before the fork point"),
        ({"step": 2}, {"model": "no-provider"}, "provider:name"),
    ],
)
def test_a_refused_fork_stores_nothing(
    store_url: str,
    script: Callable[[dict[str, Any]], str],
    point: dict[str, Any],
    overrides: dict[str, Any],
    said: str,
) -> None:
    with SyncRuntime(store_url) as rt:
        task = rt.run(weather, {"city": "Oslo"}, model=script({"act": [{"content": "Warm."}]}))
        with pytest.raises(InputError, match=said):
            rt.fork(task.id, **point, **overrides)
        assert [t.id for t in rt.list_tasks()] == [task.id]

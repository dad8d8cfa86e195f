"""A long tool loop is compacted: older turns summarized (a journaled call), nothing deleted."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ratchet import Runtime, TaskStatus
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan, say, verdict
from .support import events_of, make_agent, model_ops, run_agent

TURNS = 6


def _script(summaries: int = 0) -> dict[str, Any]:
    return {
        "plan": [plan("read the logs")],
        "act": [calls(("fetch_logs", {"service": f"X{turn}", "size": 400})) for turn in range(TURNS)]
        + [say("the logs look normal")],
        "verify": [verdict(True)],
        "summarize": [{"content": f"summary {n}: X0.. were read, all normal"} for n in range(summaries)],
    }


async def _run(store: StateStore, script: Callable[[dict[str, Any]], str], **spec: Any) -> Any:
    agent = make_agent(script(_script(summaries=TURNS)), **spec)
    task = await run_agent(Runtime(store), agent)
    assert task.status is TaskStatus.COMPLETED, task.error
    return task


def _size(messages: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages))


async def test_a_history_over_its_budget_is_summarized_by_a_journaled_call(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run(store, script, history_token_budget=200, keep_recent_messages=2)

    summaries = await model_ops(store, task.id, "summarize")
    assert summaries, "no summarize call was made"
    assert [op.meta["ordinal"] for op in summaries] == list(range(len(summaries)))
    first = summaries[0].input["messages"]
    assert first[0]["role"] == "system"
    older = json.loads(first[1]["content"])
    assert older and older[0]["role"] == "assistant"  # the step's system and user messages stay out of it
    assert len(await events_of(store, task.id, "compacted")) == len(summaries)


async def test_act_prompts_after_a_compaction_carry_the_summary_and_are_shorter(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run(store, script, history_token_budget=200, keep_recent_messages=2)

    ops = await store.list_ops(task.id)
    first_summary = next(op for op in ops if op.name == "model:summarize")
    acts = [op for op in ops if op.name == "model:act"]
    before = [op for op in acts if op.seq < first_summary.seq]
    after = [op for op in acts if op.seq > first_summary.seq]
    assert before and after
    full_history = [m.model_dump(include={"role", "content"}) for m in await store.list_messages(task.id)]
    last = after[-1].input["messages"]
    assert len(last) < len(full_history)
    assert _size(last) < _size(full_history) / 2
    assert any("summary" in str(m.get("content")) and m["role"] == "user" for m in last)
    assert last[0] == before[0].input["messages"][0]  # the step's system prompt is always kept
    assert max(_size(op.input["messages"]) for op in after) < _size(full_history)


async def test_compaction_deletes_no_stored_message(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run(store, script, history_token_budget=200, keep_recent_messages=2)

    messages = await store.list_messages(task.id)
    assert [m.role for m in messages] == ["system", "user"] + ["assistant", "tool"] * TURNS + ["assistant"]
    tools = [m for m in messages if m.role == "tool"]
    assert [m.name for m in tools] == ["fetch_logs"] * TURNS
    contents: list[Any] = [m.content for m in tools]
    assert [content[:2] for content in contents] == [f"X{turn}" for turn in range(TURNS)]
    assert all(len(content) == 400 for content in contents)
    assert len({m.seq for m in messages}) == len(messages)


async def test_a_history_within_its_budget_is_not_summarized(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task = await _run(store, script)

    assert await model_ops(store, task.id, "summarize") == []
    last = (await model_ops(store, task.id, "act"))[-1].input["messages"]
    assert len(last) == 2 + 2 * TURNS

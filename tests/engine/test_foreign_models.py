"""``ctx.call_foreign_model``: another library's model request, journaled like ``ctx.call_model``'s;
``current_context()`` and ``current_tool_call()``: the running workflow's context and tool call,
for code handed neither."""

from __future__ import annotations

from pydantic import JsonValue

import ratchet
from ratchet.engine.calls import Call
from ratchet.engine.calls.tool_serving import current_tool_call
from ratchet.engine.context import Context
from ratchet.engine.current import current_context
from ratchet.policy import Budget
from ratchet.records import OpKind, OpStatus, TaskStatus, WaitReason
from ratchet.runtime import Runtime
from ratchet.store import StateStore
from ratchet.tools import ToolContext

ASKED: list[JsonValue] = []


async def _answer(call: Call) -> JsonValue:
    ASKED.append(call.input)
    call.meta["usage"] = {"prompt_tokens": 40, "completion_tokens": 2, "cost": None}
    return {"text": f"answer {len(ASKED)}"}


@ratchet.workflow
async def asks_a_foreign_model(ctx: Context) -> JsonValue:
    """Two foreign model requests, then a question: the answer resumes the workflow from the top."""
    assert current_context() is ctx
    first = await ctx.call_foreign_model("model:other", {"say": "one"}, _answer)
    second = await ctx.call_foreign_model("model:other", {"say": "two"}, _answer)
    answer = await ctx.ask_user("go on?")
    return {"first": first, "second": second, "answer": answer}


async def test_a_foreign_model_request_is_journaled_and_replayed(store: StateStore, rt: Runtime) -> None:
    ASKED.clear()
    waiting = await rt.run(asks_a_foreign_model)
    assert waiting.waiting_on is WaitReason.INPUT
    await rt.answer(waiting.id, "yes")

    done = await rt.resume(waiting.id)

    assert done.status is TaskStatus.COMPLETED
    assert ASKED == [{"say": "one"}, {"say": "two"}]  # the replay asked nothing again
    assert done.result == {"first": {"text": "answer 1"}, "second": {"text": "answer 2"}, "answer": "yes"}
    ops = (await store.list_ops(waiting.id))[:2]
    assert [(op.kind, op.name, op.status, op.input) for op in ops] == [
        (OpKind.MODEL, "model:other", OpStatus.SUCCEEDED, {"say": "one"}),
        (OpKind.MODEL, "model:other", OpStatus.SUCCEEDED, {"say": "two"}),
    ]
    assert ops[0].meta["usage"] == {"prompt_tokens": 40, "completion_tokens": 2, "cost": None}
    assert current_context() is None


async def test_a_foreign_models_usage_counts_toward_the_budget(rt: Runtime) -> None:
    ASKED.clear()
    task = await rt.run(asks_a_foreign_model, budget=Budget(max_llm_tokens=50))

    assert task.status is TaskStatus.FAILED
    assert task.error is not None and "budget exceeded (max_llm_tokens: 84 tokens of 50 tokens)" in task.error
    assert len(ASKED) == 2  # the limit is checked after each call: the second one crossed it


SEEN: list[object] = []


@ratchet.tool
async def notes_its_call(ctx: ToolContext) -> str:
    """Record what `current_tool_call` says inside a tool's body."""
    SEEN.append(current_tool_call() == ctx)
    return "ok"


@ratchet.workflow(tools=[notes_its_call])
async def calls_a_tool(ctx: Context) -> JsonValue:
    SEEN.append(current_tool_call())
    return await ctx.call_tool("notes_its_call")


async def test_current_tool_call_is_the_running_tools_context_and_none_around_it(rt: Runtime) -> None:
    SEEN.clear()
    task = await rt.run(calls_a_tool)

    assert task.status is TaskStatus.COMPLETED
    assert SEEN == [None, True]
    assert current_tool_call() is None

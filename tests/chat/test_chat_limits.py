"""A chat turn's model answer asking for too many tool calls at once runs none of them."""

from __future__ import annotations

import json
from pathlib import Path

from ratchet import Runtime, TaskStatus
from ratchet.chat import ChatClient
from ratchet.limits import MAX_TOOL_CALLS_PER_ANSWER
from ratchet.records import OpKind

from .support import tool_call


async def test_an_answer_with_too_many_tool_calls_runs_none_and_the_model_is_told(tmp_path: Path) -> None:
    flood = [tool_call("add_task", description=f"t{n}") for n in range(10_000)]
    script = tmp_path / "flood.json"
    script.write_text(
        json.dumps(
            {
                "act": [
                    {"tool_calls": flood},
                    {"tool_calls": [tool_call("add_task", description="one")]},
                    {"content": "Added one."},
                ]
            }
        )
    )
    async with Runtime("memory://") as runtime:
        task = await ChatClient(runtime, "s").chat("add them", model=f"scripted:{script}")

        assert task.status is TaskStatus.COMPLETED, task.error
        assert [t["description"] for t in await ChatClient(runtime, "s").tasks()] == ["one"]
        assert [op.name for op in await runtime.store.list_ops(task.id) if op.kind is OpKind.TOOL].count(
            "add_task"
        ) == 1
        (refused,) = [e for e in await runtime.store.list_events(task.id) if e.kind == "tool_calls_refused"]
        assert refused.data == {"asked": 10_000, "limit": MAX_TOOL_CALLS_PER_ANSWER}
        second = [op for op in await runtime.store.list_ops(task.id) if op.kind is OpKind.MODEL][1]
        told = second.input["messages"][-1]
        assert told["role"] == "user" and "none of them ran" in told["content"]

"""One chat turn in process: what the model is told, and how odd calls are answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ratchet import Runtime, TaskStatus
from ratchet.chat import ChatClient
from ratchet.records import OpKind

from .support import tool_call, write_turn_script


async def test_odd_calls_are_answered_to_the_model_and_the_list_is_in_the_prompt(tmp_path: Path) -> None:
    script = write_turn_script(
        tmp_path / "odd.json",
        [
            tool_call("update_task", index="second", completion=10),
            tool_call("delete_everything"),
            tool_call("add_task", description="buy milk"),
        ],
        "Done what I could.",
    )
    async with Runtime("memory://") as runtime:
        await runtime.session("s").update(
            lambda s: {**s, "tasks": [{"description": "old", "completion": 30}]}
        )
        task = await ChatClient(runtime, "s").chat("do things", model=f"scripted:{script}")
        assert task.status is TaskStatus.COMPLETED
        result: Any = task.result
        replies = [a["result"] for a in result["actions"]]
        assert replies[0].startswith("error: bad arguments for update_task: index:")
        assert replies[1].startswith("error: there is no tool 'delete_everything'")
        assert replies[2] == "Added task 2: 'buy milk' (0% done)."
        first, second = [op for op in await runtime.store.list_ops(task.id) if op.kind is OpKind.MODEL]
        system = first.input["messages"][0]["content"]
        assert "1. old - 30%" in system
        assert [t["function"]["name"] if "function" in t else t["name"] for t in first.input["tools"]] == [
            "add_task",
            "update_task",
            "remove_task",
            "list_tasks",
        ]
        assert json.dumps(second.input["messages"]).count('"role": "tool"') == 3


async def test_a_turn_that_never_answers_fails_clearly_and_keeps_its_changes(tmp_path: Path) -> None:
    script = tmp_path / "loop.json"
    script.write_text(
        json.dumps({"act": [{"tool_calls": [tool_call("add_task", description=f"t{n}")]} for n in range(5)]})
    )
    async with Runtime("memory://") as runtime:
        task = await ChatClient(runtime, "s").chat("loop", model=f"scripted:{script}", max_model_calls=3)
        assert task.status is TaskStatus.FAILED
        assert "made 3 model calls without answering" in (task.error or "")
        assert [t["description"] for t in await ChatClient(runtime, "s").tasks()] == ["t0", "t1", "t2"]


async def test_the_next_turn_sees_the_last_exchanges(tmp_path: Path) -> None:
    hello = write_turn_script(tmp_path / "hi.json", [tool_call("list_tasks")], "Your list is empty.")
    async with Runtime("memory://") as runtime:
        await ChatClient(runtime, "s").chat("hello", model=f"scripted:{hello}")
        task = await ChatClient(runtime, "s").chat("and now?", model=f"scripted:{hello}")
        first = next(op for op in await runtime.store.list_ops(task.id) if op.kind is OpKind.MODEL)
        said = [(m["role"], m["content"]) for m in first.input["messages"][1:]]
        assert said == [("user", "hello"), ("assistant", "Your list is empty."), ("user", "and now?")]

"""Two chat turns on one session at once, each on its own store connection: both changes kept."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ratchet import Runtime, TaskStatus, ToolContext
from ratchet.chat import ChatClient
from ratchet.chat.tools import session_tools
from ratchet.store import open_store

from .support import tool_call, write_turn_script


async def test_two_turns_at_once_keep_both_tasks(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    milk = write_turn_script(
        tmp_path / "milk.json", [tool_call("add_task", description="buy milk")], "Added."
    )
    report = write_turn_script(
        tmp_path / "report.json", [tool_call("add_task", description="write report")], "Added."
    )
    async with Runtime(url) as first, Runtime(url) as second:
        done = await asyncio.gather(
            ChatClient(first, "s").chat("add milk", model=f"scripted:{milk}"),
            ChatClient(second, "s").chat("add report", model=f"scripted:{report}"),
        )
        assert [task.status for task in done] == [TaskStatus.COMPLETED, TaskStatus.COMPLETED]
        results: list[Any] = [task.result for task in done]
        assert [result["answer"] for result in results] == ["Added.", "Added."]
        state: dict[str, Any] = await first.session("s").state()
    assert sorted(t["description"] for t in state["tasks"]) == ["buy milk", "write report"]
    assert state["turns"] == 2
    assert sorted(h["user"] for h in state["history"]) == ["add milk", "add report"]


async def test_many_concurrent_changes_from_two_connections_are_all_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    stores = [await open_store(url), await open_store(url)]
    try:
        adders = [{t.name: t for t in session_tools(store, "s")}["add_task"] for store in stores]

        async def add(writer: int, n: int) -> object:
            key = f"writer{writer}:{n}"
            context = ToolContext(task_id=f"writer{writer}", seq=n, attempt=1, idempotency_key=key)
            return await adders[writer].invoke({"description": key}, context)

        await asyncio.gather(*(add(writer, n) for n in range(15) for writer in (0, 1)))
        state: dict[str, Any] = (await stores[0].get_session("s")).state
    finally:
        for store in stores:
            await store.close()
    assert sorted(t["description"] for t in state["tasks"]) == sorted(
        f"writer{w}:{n}" for n in range(15) for w in (0, 1)
    )

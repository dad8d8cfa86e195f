"""The chat tools on a session: each change applied once per idempotency key."""

from __future__ import annotations

from typing import Any

import pytest

from ratchet import Runtime, ToolContext
from ratchet.chat import ChatClient, tasklist
from ratchet.chat.tools import session_tools
from ratchet.store import StateStore


@pytest.fixture
def store_kind() -> str:
    return "memory"


def context(key: str) -> ToolContext:
    task_id, _, seq = key.rpartition(":")
    return ToolContext(task_id=task_id, seq=int(seq), attempt=1, idempotency_key=key)


async def call(store: StateStore, name: str, key: str = "t:0", session: str = "s", **args: object) -> object:
    tools = {t.name: t for t in session_tools(store, session)}
    return await tools[name].invoke(dict(args), context(key))


async def test_add_update_remove_list(store: StateStore) -> None:
    assert await call(store, "list_tasks") == "The task list is empty."
    assert (
        await call(store, "add_task", "t:1", description="buy milk") == "Added task 1: 'buy milk' (0% done)."
    )
    await call(store, "add_task", "t:2", description="write report")
    assert "is 40% done" in str(await call(store, "update_task", "t:3", index=1, completion=40))
    assert "is 100% done (clamped from 250)" in str(
        await call(store, "update_task", "t:4", index=2, completion=250)
    )
    assert "is 0% done (clamped from -5)" in str(
        await call(store, "update_task", "t:5", index=1, completion=-5)
    )
    assert await call(store, "list_tasks") == "1. buy milk - 0%\n2. write report - 100%"
    assert await call(store, "remove_task", "t:6", index=1) == "Removed task 1: 'buy milk'."
    state: dict[str, Any] = (await store.get_session("s")).state
    assert state["tasks"] == [{"description": "write report", "completion": 100}]
    assert [a["key"] for a in state["applied"]] == ["t:1", "t:2", "t:3", "t:4", "t:5", "t:6"]


async def test_bad_index_is_a_message_not_a_failure(store: StateStore) -> None:
    assert await call(store, "remove_task", "t:1", index=1) == "There is no task 1: the task list is empty."
    await call(store, "add_task", "t:2", description="a")
    assert await call(store, "update_task", "t:3", index=0, completion=5) == (
        "There is no task 0: the tasks are numbered 1 to 1."
    )
    assert (
        await call(store, "remove_task", "t:4", index=7)
        == "There is no task 7: the tasks are numbered 1 to 1."
    )
    assert (await store.get_session("s")).state["tasks"] == [{"description": "a", "completion": 0}]


async def test_a_call_run_again_with_its_key_applies_once(store: StateStore) -> None:
    first = await call(store, "add_task", "turn-1:3", description="buy milk")
    again = await call(store, "add_task", "turn-1:3", description="buy milk")
    assert first == again
    await call(store, "remove_task", "turn-1:4", index=1)
    assert await call(store, "remove_task", "turn-1:4", index=1) == "Removed task 1: 'buy milk'."
    assert (await store.get_session("s")).state["tasks"] == []


def test_the_applied_keys_are_bounded() -> None:
    state: dict[str, Any] = {}
    for n in range(tasklist.MAX_APPLIED + 10):
        state, _ = tasklist.apply_once(state, f"t:{n}", tasklist.add(f"task {n}"))
    assert len(state["applied"]) == tasklist.MAX_APPLIED
    assert state["applied"][0]["key"] == "t:10"


async def test_runtime_session_handle(store: StateStore) -> None:
    async with Runtime(store) as runtime:
        handle = runtime.session("notes")
        assert await handle.record() is None
        assert await handle.state() == {}
        assert await handle.update(lambda s: {**s, "tasks": [{"description": "x", "completion": 5}]}) == {
            "tasks": [{"description": "x", "completion": 5}]
        }
        assert await ChatClient(runtime, "notes").tasks() == [{"description": "x", "completion": 5}]
        record = await handle.record()
        assert record is not None and record.version == 1

"""The chat with the user's own tools and instructions; tools reach the session through
``ctx.session``; a turn a stop interrupted is found and finished."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ratchet import Compaction, Runtime, TaskStatus
from ratchet.chat import ChatClient
from ratchet.chat.client import ChatOptions, start_turn
from ratchet.chat.terminal import chat_loop
from ratchet.chat.turn import CHAT_TURN_WORKFLOW
from ratchet.engine.calls.compaction import SUMMARY_PREFIX
from ratchet.errors import InputError
from ratchet.sessions import CallSession
from ratchet.store import StateStore, open_store
from ratchet.tools import tool

from .support import tool_call
from .user_tools import note, probe


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _script(tmp_path: Path, calls: list[dict[str, Any]], answer: str) -> str:
    path = tmp_path / "turn.json"
    path.write_text(json.dumps({"act": [{"tool_calls": calls}, {"content": answer}]}))
    return f"scripted:{path}"


async def test_the_users_tools_and_instructions_reach_the_model_and_the_session(
    store: StateStore, tmp_path: Path
) -> None:
    chat = ChatClient(Runtime(store), "s", tools=[note], instructions="Answer in French.")

    task = await chat.chat("note milk", model=_script(tmp_path, [tool_call("note", text="milk")], "Noté."))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, dict)
    assert task.result["actions"] == [
        {"tool": "note", "arguments": {"text": "milk"}, "result": "noted (0 before, 1 now)"}
    ]
    state = (await store.get_session("s")).state
    assert state["notes"] == ["milk"]
    assert state["unfinished"] == []
    [first, *_] = [op for op in await store.list_ops(task.id) if op.name == "model:act"]
    system = first.input["messages"][0]["content"]
    assert "Answer in French." in system and "note" in system
    assert [t["name"] for t in first.input["tools"]][-1] == "note"


async def test_a_change_is_applied_once_per_call(store: StateStore) -> None:
    def add(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "count": int(state.get("count", 0)) + 1}

    for _run in range(2):  # the same call run again (after a crash): its key is the same
        session = CallSession(store, "s", "turn-1:3")
        assert (await session.load()).get("count", 0) in (0, 1)
        assert (await session.update(add))["count"] == 1
    other = CallSession(store, "s", "turn-1:4")
    await other.update(add)
    await other.update(add)  # a second change of one call is a change of its own
    assert (await other.load())["count"] == 3
    assert "_ratchet_applied" not in other.state


async def test_a_tool_outside_a_session_gets_none(store: StateStore) -> None:
    task = await Runtime(store).run(probe)
    assert task.result == "no session"


def test_a_tool_named_like_a_chat_tool_is_refused(store: StateStore) -> None:
    with pytest.raises(InputError, match="one of the chat's own tools"):
        ChatClient(Runtime(store), "s", tools=[tool(name="add_task")(lambda description: description)])


async def _stopped_turn(store: StateStore, model: str, message: str) -> str:
    """A turn counted and created, then stopped before it ran (as a crash leaves it)."""
    task_id, turn_model = await start_turn(store, "s", model)
    inputs = {"session": "s", "message": message, **ChatOptions(tool_sources=()).inputs()}
    await Runtime(store).submit(
        CHAT_TURN_WORKFLOW, inputs, instruction=message, model=turn_model, task_id=task_id, queue=False
    )
    return task_id


async def test_a_stopped_turn_is_listed_and_finished(store: StateStore, tmp_path: Path) -> None:
    model = _script(tmp_path, [tool_call("add_task", description="buy milk")], "Added.")
    task_id = await _stopped_turn(store, model, "add buy milk")
    chat = ChatClient(Runtime(store), "s")

    assert [t.id for t in await chat.unfinished()] == [task_id]
    finished = await chat.finish(task_id)

    assert finished.status is TaskStatus.COMPLETED
    assert await chat.unfinished() == []
    assert await chat.tasks() == [{"description": "buy milk", "completion": 0}]


def test_the_chat_finishes_a_stopped_turn_when_it_starts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    model = _script(tmp_path, [tool_call("add_task", description="buy milk")], "Added.")

    async def stop_a_turn() -> str:
        store = await open_store(url)
        try:
            return await _stopped_turn(store, model, "add buy milk")
        finally:
            await store.close()

    task_id = asyncio.run(stop_a_turn())  # chat_loop runs its own event loops: this test has none
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)

    code = chat_loop(
        url, "s", model, max_model_calls=4, console=console, resume_command=str, read=lambda _: "exit"
    )

    assert code == 0
    text = out.getvalue()
    assert f"Finishing the turn a stop interrupted: 'add buy milk' [task {task_id}]" in text
    assert "assistant: Added." in text
    assert "│ 1 │ buy milk │   0% │" in text


async def _long_chat(store: StateStore, tmp_path: Path, **options: Any) -> list[Any]:
    path = tmp_path / "ok.json"
    path.write_text(json.dumps({"act": [{"content": "ok"}], "summarize": [{"content": "earlier turns"}]}))
    chat = ChatClient(Runtime(store), "s", **options)
    return [await chat.chat(f"{n}: " + "remember this " * 25, model=f"scripted:{path}") for n in range(3)]


async def test_the_chat_uses_the_compaction_middleware(store: StateStore, tmp_path: Path) -> None:
    turns = await _long_chat(store, tmp_path, compaction=Compaction(token_budget=200, keep_recent=2))

    last = turns[-1]
    ops = await store.list_ops(last.id)
    assert [op.name for op in ops if op.name.startswith("model:")] == ["model:summarize", "model:act"]
    sent = next(op for op in ops if op.name == "model:act").input["messages"]
    assert sent[2]["content"].startswith(SUMMARY_PREFIX)
    assert len(sent) == 2 + 1 + 2
    history: Any = (await store.get_session("s")).state["history"]
    assert [h["user"][:2] for h in history] == ["0:", "1:", "2:"]  # what is kept is whole


async def test_the_chat_without_compaction_sends_every_kept_exchange(
    store: StateStore, tmp_path: Path
) -> None:
    turns = await _long_chat(store, tmp_path, compaction=None)

    ops = await store.list_ops(turns[-1].id)
    assert [op.name for op in ops if op.name.startswith("model:")] == ["model:act"]
    assert len(ops[-2].input["messages"]) == 1 + 2 * 2 + 1

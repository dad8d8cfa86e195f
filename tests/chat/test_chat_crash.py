"""A chat process killed during a turn: `ratchet resume` finishes the turn, each tool applied once."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from ratchet.errors import SessionNotFound, StoreError
from ratchet.store import open_store

from .support import (
    ratchet,
    start_ratchet,
    stored_session,
    tool_call,
    write_turn_script,
)
from .user_tools import tool_runs


async def turn_task_id(url: str) -> str:
    store = await open_store(url, create=False)
    try:
        [task] = await store.list_tasks()
        return task.id
    finally:
        await store.close()


async def wait_for_tasks(url: str, count: int, timeout: float = 30.0) -> None:
    async def count_reached() -> None:
        while True:
            try:
                tasks: Any = (await stored_session(url, "s")).state.get("tasks", [])
                if len(tasks) >= count:
                    return
            except (SessionNotFound, StoreError):  # not created or not written yet
                pass
            await asyncio.sleep(0.05)

    await asyncio.wait_for(count_reached(), timeout)


async def test_sigkill_during_a_turn_then_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    write_turn_script(
        tmp_path / "add.json", [tool_call("add_task", description="buy milk")], "Added.", delay=2.0
    )
    chat = start_ratchet(
        "chat", "--session", "s", "--model", "scripted:add.json", "--store", url, cwd=tmp_path
    )
    assert chat.stdin is not None
    chat.stdin.write("add buy milk\n")
    chat.stdin.flush()
    await wait_for_tasks(url, 1)  # the tool ran; the model's answer is on its way (2 s)
    chat.send_signal(signal.SIGKILL)
    chat.wait(timeout=10)

    task_id = await turn_task_id(url)
    resumed = ratchet("resume", task_id, "--json", "--store", url, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    state: dict[str, Any] = (await stored_session(url, "s")).state
    assert state["tasks"] == [{"description": "buy milk", "completion": 0}]
    assert [h["assistant"] for h in state["history"]] == ["Added."]
    assert len([a for a in state["applied"] if a["result"].startswith("Added task")]) == 1


async def test_killed_after_the_change_before_its_result_was_journaled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    write_turn_script(tmp_path / "add.json", [tool_call("add_task", description="buy milk")], "Added.")
    # Results journaled in a turn: the read of the session, the model's answer, then add_task's.
    killed = ratchet(
        "chat",
        "--session",
        "s",
        "--model",
        "scripted:add.json",
        "--store",
        url,
        cwd=tmp_path,
        stdin="add buy milk\n",
        RATCHET_CRASH_AT="before_result_commit@3",
    )
    assert killed.returncode == -signal.SIGKILL
    assert (await stored_session(url, "s")).state["tasks"] == [{"description": "buy milk", "completion": 0}]

    task_id = await turn_task_id(url)
    resumed = ratchet("resume", task_id, "--json", "--store", url, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["result"]["answer"] == "Added."
    state: dict[str, Any] = (await stored_session(url, "s")).state
    assert state["tasks"] == [{"description": "buy milk", "completion": 0}]  # run again with its key: once
    again = ratchet(
        "chat", "--session", "s", "--model", "scripted:add.json", "--store", url, cwd=tmp_path, stdin="exit\n"
    )
    assert "│ 1 │ buy milk │   0% │" in again.stdout


USER_TOOLS = str(Path(__file__).with_name("user_tools.py"))


def _chat_args(url: str, script: str) -> list[str]:
    return ["chat", "--session", "s", "--model", f"scripted:{script}", "--store", url, "--tools", USER_TOOLS]


async def wait_for_notes(url: str, count: int, timeout: float = 30.0) -> None:
    async def count_reached() -> None:
        while True:
            try:
                notes: Any = (await stored_session(url, "s")).state.get("notes", [])
                if len(notes) >= count:
                    return
            except (SessionNotFound, StoreError):  # not created or not written yet
                pass
            await asyncio.sleep(0.05)

    await asyncio.wait_for(count_reached(), timeout)


async def _finished_once(url: str, tmp_path: Path, log: Path) -> list[str]:
    """Start the chat again: it finishes the stopped turn; the note is kept once. Returns the tool's runs."""
    again = ratchet(*_chat_args(url, "note.json"), cwd=tmp_path, stdin="exit\n", CHAT_TOOL_LOG=str(log))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Finishing the turn a stop interrupted: 'note milk'" in again.stdout
    assert "assistant: Noted." in again.stdout
    state: dict[str, Any] = (await stored_session(url, "s")).state
    assert state["notes"] == ["milk"]  # the tool's change happened once
    assert [h["assistant"] for h in state["history"]] == ["Noted."]
    assert state["unfinished"] == []
    return tool_runs(log)


async def test_sigkill_after_a_users_tool_ran_then_the_chat_finishes_the_turn(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    log = tmp_path / "runs.log"
    write_turn_script(tmp_path / "note.json", [tool_call("note", text="milk")], "Noted.", delay=2.0)
    chat = start_ratchet(*_chat_args(url, "note.json"), cwd=tmp_path, CHAT_TOOL_LOG=str(log))
    assert chat.stdin is not None
    chat.stdin.write("note milk\n")
    chat.stdin.flush()
    await wait_for_notes(url, 1)  # the tool ran; the model's answer is on its way (2 s)
    chat.send_signal(signal.SIGKILL)
    chat.wait(timeout=10)

    runs = await _finished_once(url, tmp_path, log)
    assert len(runs) == 1  # its result was journaled: the finished turn did not run it again


async def test_killed_between_a_users_change_and_its_journal_entry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    log = tmp_path / "runs.log"
    write_turn_script(tmp_path / "note.json", [tool_call("note", text="milk")], "Noted.")
    # Results journaled in a turn: the read of the session, the model's answer, then the note's.
    killed = ratchet(
        *_chat_args(url, "note.json"),
        cwd=tmp_path,
        stdin="note milk\n",
        CHAT_TOOL_LOG=str(log),
        RATCHET_CRASH_AT="before_result_commit@3",
    )
    assert killed.returncode == -signal.SIGKILL

    runs = await _finished_once(url, tmp_path, log)
    assert len(runs) == 2 and len(set(runs)) == 1  # run again with its key; its change applied once


async def test_ctrl_c_during_a_turn_then_the_chat_finishes_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    log = tmp_path / "runs.log"
    write_turn_script(tmp_path / "note.json", [tool_call("note", text="milk")], "Noted.", delay=2.0)
    chat = start_ratchet(*_chat_args(url, "note.json"), cwd=tmp_path, CHAT_TOOL_LOG=str(log))
    assert chat.stdin is not None
    chat.stdin.write("note milk\n")
    chat.stdin.flush()
    await wait_for_notes(url, 1)
    chat.send_signal(signal.SIGINT)
    out, _ = chat.communicate(timeout=30)
    assert chat.returncode == 130
    assert "it is finished when the chat starts again" in out

    assert len(await _finished_once(url, tmp_path, log)) == 1

"""`ratchet chat --tools FILE --instructions TEXT`, as a user runs it."""

from __future__ import annotations

from pathlib import Path

from ratchet.store import open_store

from .support import ratchet, stored_session, tool_call, write_turn_script

USER_TOOLS = str(Path(__file__).with_name("user_tools.py"))


async def test_the_chat_offers_the_users_tools_and_follows_their_instructions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    write_turn_script(tmp_path / "note.json", [tool_call("note", text="milk")], "Noted.")

    done = ratchet(
        "chat",
        "--session",
        "s",
        "--model",
        "scripted:note.json",
        "--store",
        url,
        "--tools",
        USER_TOOLS,
        "--instructions",
        "Keep every note short.",
        cwd=tmp_path,
        stdin="note milk\nexit\n",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "note(text='milk') -> noted (0 before, 1 now)" in done.stdout
    assert "assistant: Noted." in done.stdout
    assert (await stored_session(url, "s")).state["notes"] == ["milk"]
    store = await open_store(url, create=False)
    try:
        [task] = await store.list_tasks()
        first = next(op for op in await store.list_ops(task.id) if op.name == "model:act")
    finally:
        await store.close()
    assert "Keep every note short." in first.input["messages"][0]["content"]
    assert "note" in [t["name"] for t in first.input["tools"]]


def test_a_tools_file_that_reuses_a_chat_tools_name_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "clash.py").write_text(
        "import ratchet\n\n\n@ratchet.tool\ndef add_task(description: str) -> str:\n    return description\n"
    )

    refused = ratchet(
        "chat", "--model", "scripted:none.json", "--tools", "clash.py", cwd=tmp_path, stdin="exit\n"
    )

    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "error: tool name 'add_task' is one of the chat's own tools; give the tool another name"
    ]

"""`ratchet chat` and `ratchet sessions` as a user runs them, with a scripted model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from .support import chat_env, ratchet, stored_session, tool_call, write_turn_script


def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'chat.db'}"


async def test_the_list_survives_a_restart(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_turn_script(
        tmp_path / "add.json",
        [tool_call("add_task", description="buy milk"), tool_call("add_task", description="write report")],
        "Added both.",
    )
    first = ratchet(
        "chat",
        "--session",
        "s",
        "--model",
        "scripted:add.json",
        "--store",
        url,
        cwd=tmp_path,
        stdin="add a task to buy milk and one to write the report\nexit\n",
    )
    assert first.returncode == 0, first.stderr
    assert "assistant: Added both." in first.stdout
    assert "│ 2 │ write report │   0% │" in first.stdout

    write_turn_script(tmp_path / "list.json", [tool_call("list_tasks")], "You have two tasks.")
    second = ratchet(
        "chat",
        "--session",
        "s",
        "--model",
        "scripted:list.json",
        "--store",
        url,
        cwd=tmp_path,
        stdin="list my tasks\nquit\n",
    )
    assert second.returncode == 0, second.stderr
    assert "│ 1 │ buy milk     │   0% │" in second.stdout.split("you>")[0]  # shown before any turn
    assert "list_tasks() -> 1. buy milk - 0%" in second.stdout
    assert "assistant: You have two tasks." in second.stdout
    state: dict[str, Any] = (await stored_session(url, "s")).state
    assert state["tasks"] == [
        {"description": "buy milk", "completion": 0},
        {"description": "write report", "completion": 0},
    ]
    assert [h["user"] for h in state["history"]] == [
        "add a task to buy milk and one to write the report",
        "list my tasks",
    ]


async def test_each_turn_takes_its_own_script_and_bad_indexes_are_answered(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_turn_script(tmp_path / "turn1.json", [tool_call("add_task", description="buy milk")], "Added.")
    write_turn_script(
        tmp_path / "turn2.json",
        [tool_call("update_task", index=1, completion=180), tool_call("remove_task", index=5)],
        "Updated; no task 5.",
    )
    done = ratchet(
        "chat",
        "--session",
        "s",
        "--model",
        "scripted:turn{turn}.json",
        "--store",
        url,
        cwd=tmp_path,
        stdin="add milk\nmilk is done, and drop task 5\n",
    )  # then Ctrl-D
    assert done.returncode == 0, done.stderr
    assert "There is no task 5: the tasks are numbered 1 to 1." in done.stdout
    assert "│ 1 │ buy milk │ 100% │" in done.stdout
    assert done.stdout.rstrip().endswith("Bye. Your tasks are kept in session 's'.")


def test_plain_chat_resumes_the_last_session_and_sessions_lists_it(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_turn_script(tmp_path / "add.json", [tool_call("add_task", description="water plants")], "Added.")
    assert (
        ratchet(
            "chat",
            "--session",
            "garden",
            "--model",
            "scripted:add.json",
            "--store",
            url,
            cwd=tmp_path,
            stdin="add water plants\n",
        ).returncode
        == 0
    )
    again = ratchet("chat", "--model", "scripted:add.json", "--store", url, cwd=tmp_path, stdin="exit\n")
    assert again.returncode == 0, again.stderr
    assert "Chat session 'garden'" in again.stdout
    assert "│ 1 │ water plants │   0% │" in again.stdout

    listed = ratchet("sessions", "--json", "--store", url, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)  # Ratchet's own record of the last chat is not listed
    assert (row["session_id"], row["tasks"], row["turns"]) == ("garden", 1, 1)
    assert row["version"] >= 3 and row["updated_at"]
    table = ratchet("sessions", "--store", url, cwd=tmp_path)
    assert "garden" in table.stdout and "_ratchet_" not in table.stdout


def test_sessions_of_a_store_that_does_not_exist_is_empty(tmp_path: Path) -> None:
    done = ratchet("sessions", "--json", "--store", store_url(tmp_path), cwd=tmp_path)
    assert (done.returncode, json.loads(done.stdout)) == (0, [])
    assert not (tmp_path / "chat.db").exists()


def test_a_bad_model_is_one_error_line(tmp_path: Path) -> None:
    done = ratchet("chat", "--model", "scripted:missing.json", "--store", store_url(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr.startswith("error: scripted model: no script file at") and "Traceback" not in done.stderr
    )


def test_what_the_model_and_the_user_wrote_is_shown_as_written(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    evil = "[bold]loud[/bold] [/a] [link=http://evil]x[/link] \x1b[2J\x1b]0;title\x07\x1b]8;;http://evil\x1b\\\r\x9b"
    shown = r"[bold]loud[/bold] [/a] [link=http://evil]x[/link] \x1b[2J\x1b]0;title\x07\x1b]8;;http://evil\x1b\\r\x9b"
    calls = [tool_call("add_task", description=f"task {evil}")]
    write_turn_script(tmp_path / "add.json", calls, f"said {evil}")
    chat = ["chat", "--session", f"s {evil}", "--model", "scripted:add.json", "--store", url]

    done = subprocess.run(
        [sys.executable, "-m", "ratchet", *chat],
        input=f"add {evil}\nexit\n".encode(),
        capture_output=True,
        cwd=tmp_path,
        env={**chat_env(), "COLUMNS": "1000"},
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out + done.stderr.decode()) is None, out
    assert f"task {shown}" in out  # the model's tool call and the task list
    assert f"assistant: said {shown}" in out
    assert f"Tasks in session s {shown}" in out

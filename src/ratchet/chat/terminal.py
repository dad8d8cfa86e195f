"""The interactive loop behind ``ratchet chat``: read a line, run it as a turn, show the list.

Each turn runs in its own event loop (``asyncio.run``) so that the prompt is a
plain blocking ``input()``: Ctrl-D or ``exit``/``quit`` at the prompt leave
cleanly; Ctrl-C during a turn cancels the run here (its lease is released,
its journal kept) and tells how to finish it with ``ratchet resume``.

What the model, its tools and the user wrote is shown as plain text
(`ratchet.printable`): never as markup, its control characters visible.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import InputError
from ..model import Task, TaskStatus
from ..printable import plain
from ..providers import resolve_model
from ..runtime import Runtime
from ..store import open_store
from . import client, tasklist

__all__ = ["EXIT_WORDS", "chat_loop", "tasks_table"]

EXIT_WORDS = frozenset({"exit", "quit"})
EXIT_INTERRUPTED = 130


def tasks_table(session_id: str, tasks: list[dict[str, Any]]) -> Table:
    """The task list as a Rich table."""
    table = Table(title=plain(f"Tasks in session {session_id}"), title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("task")
    table.add_column("done", justify="right")
    for number, task in enumerate(tasks, 1):
        table.add_row(str(number), plain(str(task["description"])), plain(f"{task['completion']}%"))
    if not tasks:
        table.add_row("", Text("(no tasks yet)", style="dim"), "")
    return table


async def _open_session(
    url: str, session: str | None, model: str, *, integrity_check: bool
) -> tuple[str, list[dict[str, Any]]]:
    store = await open_store(url, integrity_check=integrity_check)
    try:
        session_id = session or await client.last_chat(store) or client.DEFAULT_SESSION
        if session_id.startswith(client.INTERNAL_PREFIX):
            raise InputError(
                f"session ids starting with {client.INTERNAL_PREFIX!r} are Ratchet's own; choose another"
            )
        state = await Runtime(store).session(session_id).state()
        if "{turn}" not in model:  # a per-turn model is checked at each turn, where its error is shown
            resolve_model(model)
        await client.remember_last_chat(store, session_id)
        return session_id, tasklist.tasks_of(state)
    finally:
        await store.close()


async def _start(url: str, session_id: str, model: str, *, integrity_check: bool) -> tuple[str, str]:
    store = await open_store(url, integrity_check=integrity_check)
    try:
        return await client.start_turn(store, session_id, model)
    finally:
        await store.close()


async def _turn(
    url: str,
    session_id: str,
    message: str,
    *,
    model: str,
    turn_model: str,
    task_id: str,
    max_model_calls: int,
    integrity_check: bool,
) -> tuple[Task, list[dict[str, Any]]]:
    store = await open_store(url, integrity_check=integrity_check)
    try:
        runtime = Runtime(store)
        task = await client.run_turn(
            runtime,
            session_id,
            message,
            model=model,
            max_model_calls=max_model_calls,
            task_id=task_id,
            turn_model=turn_model,
        )
        return task, await client.ChatClient(runtime, session_id).tasks()
    finally:
        await store.close()


def _say(console: Console, text: str | Text) -> None:
    """One line as written: no markup, never wrapped; a `Text` must be built from `plain` parts."""
    console.print(plain(text) if isinstance(text, str) else text, markup=False, soft_wrap=True)


def _show_turn(console: Console, task: Task) -> None:
    result: dict[str, Any] = task.result if isinstance(task.result, dict) else {}
    for action in result.get("actions", []):
        args = ", ".join(f"{k}={v!r}" for k, v in dict(action.get("arguments") or {}).items())
        _say(console, plain(f"  · {action['tool']}({args}) -> {action['result']}", style="dim"))
    if task.status is TaskStatus.COMPLETED:
        _say(console, Text("assistant: ", style="bold cyan") + plain(str(result.get("answer", ""))))
    else:
        _say(console, f"the turn did not finish ({task.status_text}): {task.error or ''} [task {task.id}]")


def chat_loop(
    url: str,
    session: str | None,
    model: str,
    *,
    max_model_calls: int,
    console: Console,
    resume_command: Callable[[str], str],
    read: Callable[[str], str] = input,
    integrity_check: bool = True,
) -> int:
    """Chat until the user leaves; return the exit code (0, or 130 after a Ctrl-C).

    Args:
        console: where the conversation is shown.
        resume_command: the command line that finishes the turn of a task id,
            shown when a turn is interrupted.
        read: reads a line after showing its prompt.
        integrity_check: check an SQLite store for damage as it opens (see `ratchet.store.open_store`).
    """
    session_id, tasks = asyncio.run(_open_session(url, session, model, integrity_check=integrity_check))
    _say(
        console,
        f"Chat session {session_id!r}. Type what to do with your tasks; 'exit', 'quit' or Ctrl-D leaves.",
    )
    console.print(tasks_table(session_id, tasks))
    while True:
        try:
            line = read("you> ").strip()
        except EOFError:
            _say(console, "")
            break
        except KeyboardInterrupt:
            _say(console, "")
            return EXIT_INTERRUPTED
        if not line:
            continue
        if line.lower() in EXIT_WORDS:
            break
        try:
            task_id, turn_model = asyncio.run(_start(url, session_id, model, integrity_check=integrity_check))
        except InputError as error:
            _say(console, f"error: {error.message}")
            continue
        try:
            task, tasks = asyncio.run(
                _turn(
                    url,
                    session_id,
                    line,
                    model=model,
                    turn_model=turn_model,
                    task_id=task_id,
                    max_model_calls=max_model_calls,
                    integrity_check=integrity_check,
                )
            )
        except KeyboardInterrupt:
            _say(console, "")
            _say(
                console,
                f"Interrupted. The turn is kept as task {task_id}; finish it with: "
                + resume_command(task_id),
            )
            return EXIT_INTERRUPTED
        _show_turn(console, task)
        console.print(tasks_table(session_id, tasks))
    _say(console, f"Bye. Your tasks are kept in session {session_id!r}.")
    return 0

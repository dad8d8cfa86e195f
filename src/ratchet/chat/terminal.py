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
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import CannotResume, InputError
from ..printable import plain
from ..providers import resolve_model
from ..records import Task, TaskStatus
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


async def _tasks(url: str, session_id: str, *, integrity_check: bool) -> list[dict[str, Any]]:
    store = await open_store(url, integrity_check=integrity_check)
    try:
        return tasklist.tasks_of(await Runtime(store).session(session_id).state())
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
    options: client.ChatOptions,
    allow_code: Sequence[str],
) -> tuple[Task, list[dict[str, Any]]]:
    store = await open_store(url, integrity_check=integrity_check)
    try:
        runtime = Runtime(store, allow_code=allow_code)
        task = await client.run_turn(
            runtime,
            session_id,
            message,
            model=model,
            max_model_calls=max_model_calls,
            task_id=task_id,
            turn_model=turn_model,
            options=options,
        )
        return task, tasklist.tasks_of(await runtime.session(session_id).state())
    finally:
        await store.close()


async def _unfinished(url: str, session_id: str, *, integrity_check: bool) -> list[Task]:
    store = await open_store(url, integrity_check=integrity_check)
    try:
        return await client.unfinished_turns(store, session_id)
    finally:
        await store.close()


async def _finish(
    url: str, task_id: str, *, integrity_check: bool, allow_code: Sequence[str]
) -> tuple[Task | None, str]:
    """Resume a stopped turn here: the finished task, or None and why it can't be finished here."""
    store = await open_store(url, integrity_check=integrity_check)
    try:
        return await Runtime(store, allow_code=allow_code).resume(task_id), ""
    except CannotResume as refused:
        return None, refused.message
    finally:
        await store.close()


def _finish_unfinished(
    console: Console,
    url: str,
    session_id: str,
    *,
    resume_command: Callable[[str], str],
    integrity_check: bool,
    allow_code: Sequence[str],
) -> None:
    """Finish the session's turns a crash or a Ctrl-C stopped, or say how to finish them.

    A turn resumes from its journal: what it did before runs not again.
    Raises `KeyboardInterrupt` when interrupted again.
    """
    for stopped in asyncio.run(_unfinished(url, session_id, integrity_check=integrity_check)):
        _say(console, f"Finishing the turn a stop interrupted: {stopped.instruction!r} [task {stopped.id}]")
        _say(console, plain(f"you> {stopped.instruction}", style="dim"))
        task, refused = asyncio.run(
            _finish(url, stopped.id, integrity_check=integrity_check, allow_code=allow_code)
        )
        if task is None:
            _say(
                console, f"It can't be finished here: {refused}; finish it with: {resume_command(stopped.id)}"
            )
            continue
        _show_turn(console, task)


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
    options: client.ChatOptions | None = None,
    allow_code: Sequence[str] = (),
) -> int:
    """Chat until the user leaves; return the exit code (0, or 130 after a Ctrl-C).

    A turn a crash or a Ctrl-C stopped is finished first, from its journal.

    Args:
        console: where the conversation is shown.
        resume_command: the command line that finishes the turn of a task id,
            shown when a turn is interrupted.
        read: reads a line after showing its prompt.
        integrity_check: check an SQLite store for damage as it opens (see `ratchet.store.open_store`).
        options: the user's tools, instructions and compaction for every turn.
        allow_code: code the turns may load beyond the project and installed packages.
    """
    options = options or client.ChatOptions()
    session_id, tasks = asyncio.run(_open_session(url, session, model, integrity_check=integrity_check))
    _say(
        console,
        f"Chat session {session_id!r}. Type what to do with your tasks; 'exit', 'quit' or Ctrl-D leaves.",
    )
    try:
        _finish_unfinished(
            console,
            url,
            session_id,
            resume_command=resume_command,
            integrity_check=integrity_check,
            allow_code=allow_code,
        )
    except KeyboardInterrupt:
        _say(console, "")
        _say(console, "Interrupted; the turn is kept and finished when the chat starts again.")
        return EXIT_INTERRUPTED
    tasks = asyncio.run(_tasks(url, session_id, integrity_check=integrity_check))
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
                    options=options,
                    allow_code=allow_code,
                )
            )
        except KeyboardInterrupt:
            _say(console, "")
            _say(
                console,
                f"Interrupted. The turn is kept as task {task_id}; it is finished when the chat "
                f"starts again, or finish it now with: {resume_command(task_id)}",
            )
            return EXIT_INTERRUPTED
        _show_turn(console, task)
        console.print(tasks_table(session_id, tasks))
    _say(console, f"Bye. Your tasks are kept in session {session_id!r}.")
    return 0

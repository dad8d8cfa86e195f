"""The task list kept in a session's state, and the changes made to it.

The state of a chat session::

    {"tasks":   [{"description": "buy milk", "completion": 0}, ...],
     "history": [{"user": "...", "assistant": "...", "task_id": "..."}, ...],
     "turns":   3,
     "unfinished": ["chat-s-3-1a2b3c"],
     "applied": [{"key": "chat-turn-1a2b:4", "result": "Added task 1: ..."}, ...]}

A change made by a tool call is applied once per idempotency key: the key and
what the change reported are kept in ``applied`` (the newest `MAX_APPLIED`),
so a call run again after a crash reports the same thing and changes nothing.
Every function here is pure: it takes a state and returns a new one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = [
    "MAX_APPLIED",
    "MAX_HISTORY",
    "add",
    "apply_once",
    "describe",
    "history_of",
    "record_exchange",
    "remove",
    "tasks_of",
    "unfinished_of",
    "update",
]

MAX_APPLIED = 200
MAX_HISTORY = 20

State = dict[str, Any]
Change = Callable[[State], tuple[State, str]]


def tasks_of(state: State) -> list[dict[str, Any]]:
    """The task list of a session state (empty when it has none)."""
    tasks = state.get("tasks")
    return [dict(t) for t in tasks] if isinstance(tasks, list) else []


def history_of(state: State) -> list[dict[str, Any]]:
    """The kept exchanges of a session state, oldest first."""
    history = state.get("history")
    return [dict(h) for h in history] if isinstance(history, list) else []


def unfinished_of(state: State) -> list[str]:
    """The task ids of the session's turns that began and have not recorded their exchange."""
    found = state.get("unfinished")
    return [str(t) for t in found] if isinstance(found, list) else []


def describe(tasks: list[dict[str, Any]]) -> str:
    """The list as the model reads it: one numbered line per task."""
    if not tasks:
        return "The task list is empty."
    return "\n".join(f"{i}. {t['description']} - {t['completion']}%" for i, t in enumerate(tasks, 1))


def _bad_index(index: int, tasks: list[dict[str, Any]]) -> str:
    if not tasks:
        return f"There is no task {index}: the task list is empty."
    return f"There is no task {index}: the tasks are numbered 1 to {len(tasks)}."


def add(description: str) -> Change:
    """Add a task at 0 % done."""

    def change(state: State) -> tuple[State, str]:
        text = description.strip()
        if not text:
            return state, "A task needs a description; nothing was added."
        tasks = [*tasks_of(state), {"description": text, "completion": 0}]
        return {**state, "tasks": tasks}, f"Added task {len(tasks)}: '{text}' (0% done)."

    return change


def update(index: int, completion: int) -> Change:
    """Set a task's completion (1-based index), clamped to 0..100."""

    def change(state: State) -> tuple[State, str]:
        tasks = tasks_of(state)
        if not 1 <= index <= len(tasks):
            return state, _bad_index(index, tasks)
        clamped = max(0, min(100, completion))
        tasks[index - 1]["completion"] = clamped
        note = "" if clamped == completion else f" (clamped from {completion})"
        return {**state, "tasks": tasks}, (
            f"Updated task {index}: '{tasks[index - 1]['description']}' is {clamped}% done{note}."
        )

    return change


def remove(index: int) -> Change:
    """Remove a task (1-based index); the ones after it move up."""

    def change(state: State) -> tuple[State, str]:
        tasks = tasks_of(state)
        if not 1 <= index <= len(tasks):
            return state, _bad_index(index, tasks)
        gone = tasks.pop(index - 1)
        return {**state, "tasks": tasks}, f"Removed task {index}: '{gone['description']}'."

    return change


def record_exchange(user: str, assistant: str, task_id: str) -> Change:
    """Keep one exchange in the history (the newest `MAX_HISTORY`); the turn is finished."""

    def change(state: State) -> tuple[State, str]:
        history = [*history_of(state), {"user": user, "assistant": assistant, "task_id": task_id}]
        unfinished = [t for t in unfinished_of(state) if t != task_id]
        return {**state, "history": history[-MAX_HISTORY:], "unfinished": unfinished}, "recorded"

    return change


def apply_once(state: State, key: str, change: Change) -> tuple[State, str]:
    """Apply `change` unless `key` was applied already; return the new state and its report.

    A key seen before returns the state untouched and the report it gave the
    first time.
    """
    applied = [dict(a) for a in state.get("applied") or []]
    for entry in applied:
        if entry.get("key") == key:
            return state, str(entry.get("result", ""))
    new_state, result = change(copy.deepcopy(state))
    applied.append({"key": key, "result": result})
    return {**new_state, "applied": applied[-MAX_APPLIED:]}, result

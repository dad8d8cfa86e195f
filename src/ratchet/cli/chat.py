"""`ratchet chat` (the task-list assistant) and `ratchet sessions` (the sessions a store keeps)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from ..chat.client import INTERNAL_PREFIX
from ..chat.tasklist import tasks_of
from ..chat.terminal import chat_loop
from ..chat.turn import DEFAULT_MAX_MODEL_CALLS
from ..errors import StoreNotFound
from ..model import Session
from ..store import DEFAULT_STORE_URL, redact_url
from . import json_output, render
from .options import JsonOption, StoreOption
from .store_access import open_store_for, run_async

__all__ = ["chat_command", "sessions_command"]


def chat_command(
    model: Annotated[
        str,
        typer.Option("--model", metavar="M", help="The model: provider:name, e.g. openai:gpt-4o-mini or "
                     "scripted:FILE.json ('{turn}' in it becomes the turn's number)."),
    ],
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="NAME",
                     help="The session keeping the task list (default: the last one used with this store)."),
    ] = None,
    max_model_calls: Annotated[
        int, typer.Option("--max-model-calls", min=1, metavar="N", help="Model calls one turn may make.")
    ] = DEFAULT_MAX_MODEL_CALLS,
    store: StoreOption = DEFAULT_STORE_URL,
) -> int:
    """Chat with an assistant that keeps your task list; every turn is a durable task."""
    return chat_loop(
        store, session, model, max_model_calls=max_model_calls, console=render.console,
        resume_command=lambda task_id: render.command("resume", task_id, store_url=store),
    )


def _session_row(session: Session) -> dict[str, Any]:
    tasks = session.state.get("tasks")
    return {
        "id": session.id,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
        "version": session.version,
        "tasks": len(tasks_of(session.state)) if isinstance(tasks, list) else None,
        "turns": session.state.get("turns"),
    }


async def _list_sessions(url: str) -> list[Session]:
    try:
        async with open_store_for(url, create=False) as opened:
            found = await opened.list_sessions()
    except StoreNotFound:
        return []  # nothing was ever stored there: an empty listing
    return [s for s in found if not s.id.startswith(INTERNAL_PREFIX)]


def sessions_command(store: StoreOption = DEFAULT_STORE_URL, as_json: JsonOption = False) -> None:
    """List sessions, most recently updated first."""
    sessions = run_async(_list_sessions(store))
    if as_json:
        json_output.print_json([_session_row(s) for s in sessions])
        return
    if not sessions:
        render.print_line(f"no sessions in {redact_url(store)}")
        return
    table = Table()
    for column in ("session", "updated", "tasks", "turns", "version"):
        table.add_column(column, justify="right" if column in ("tasks", "turns", "version") else "left")
    for session in sessions:
        row = _session_row(session)
        table.add_row(row["id"], render.format_time(session.updated_at),
                      "-" if row["tasks"] is None else str(row["tasks"]),
                      "-" if row["turns"] is None else str(row["turns"]), str(row["version"]))
    render.console.print(table)

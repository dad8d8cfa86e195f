"""`ratchet chat` (the task-list assistant) and `ratchet sessions` (the sessions a store keeps)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..chat.client import ChatOptions
from ..chat.listing import SessionSummary, list_session_summaries
from ..chat.terminal import chat_loop
from ..chat.turn import DEFAULT_MAX_MODEL_CALLS, user_tools
from ..errors import StoreNotFound
from ..store import DEFAULT_STORE_URL, redact_url
from ..trust.code import CodeTrust
from . import json_output, render
from .agent_spec import checked_tool_sources
from .interrupts import as_python_does
from .options import MAX_COUNT, AllowCodeOption, ForceOpenOption, JsonOption, StoreOption
from .store_access import integrity_check, open_store_for, run_async

__all__ = ["chat_command", "sessions_command"]


def chat_command(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            envvar="RATCHET_MODEL",
            metavar="M",
            help="The model: provider:name, e.g. openai:gpt-4o-mini or "
            "scripted:FILE.json ('{turn}' in it becomes the turn's number); "
            "default: [model] default of ratchet.toml.",
        ),
    ],
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            metavar="NAME",
            help="The session keeping the task list (default: the last one used with this store).",
        ),
    ] = None,
    max_model_calls: Annotated[
        int,
        typer.Option(
            "--max-model-calls", min=1, max=MAX_COUNT, metavar="N", help="Model calls one turn may make."
        ),
    ] = DEFAULT_MAX_MODEL_CALLS,
    tools: Annotated[
        list[str] | None,
        typer.Option(
            "--tools",
            metavar="FILE.py|MODULE",
            help="Also give the assistant every @ratchet.tool of this file or module; repeat for more.",
        ),
    ] = None,
    instructions: Annotated[
        str,
        typer.Option("--instructions", metavar="TEXT", help="Your instructions, added to the assistant's."),
    ] = "",
    store: StoreOption = DEFAULT_STORE_URL,
    force_open: ForceOpenOption = False,
    allow_code: AllowCodeOption = None,
) -> int:
    """Chat with an assistant that keeps your task list; every turn is a durable task.

    A turn a crash or a Ctrl-C stopped is finished when the chat starts again.
    """
    CodeTrust.here(allow_code or ())  # a bad allowance is bad input now
    sources = checked_tool_sources(tools or [])
    user_tools(sources)  # a tool named like one of the chat's own: bad input now, not at the turn
    with as_python_does():  # each turn's event loop cancels it on Ctrl-C, and the loop says how to finish it
        return chat_loop(
            store,
            session,
            model,
            max_model_calls=max_model_calls,
            console=render.console,
            resume_command=lambda task_id: render.command("resume", task_id, store_url=store),
            integrity_check=integrity_check(),
            options=ChatOptions(tool_sources=tuple(sources), instructions=instructions),
            allow_code=allow_code or [],
        )


async def _list_sessions(url: str) -> list[SessionSummary]:
    try:
        async with open_store_for(url, create=False) as opened:
            return await list_session_summaries(opened)
    except StoreNotFound:
        return []  # nothing was ever stored there: an empty listing


def sessions_command(
    store: StoreOption = DEFAULT_STORE_URL, force_open: ForceOpenOption = False, as_json: JsonOption = False
) -> None:
    """List sessions, most recently updated first."""
    listed = run_async(_list_sessions(store))
    if as_json:
        json_output.print_json(
            [json_output.session_json(s.session, tasks=s.tasks, turns=s.turns) for s in listed]
        )
        return
    if not listed:
        render.print_line(f"no sessions in {redact_url(store)}")
        return
    render.print_sessions(listed)

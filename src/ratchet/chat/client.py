"""The task-list assistant for Python programs (`ChatClient`), starting turns, and which
session a plain ``ratchet chat`` resumes.

Each user message becomes one task of the ``chat_turn`` workflow, run here
with `Runtime.run`. The session counts its turns (``turns`` in its state);
a model string may hold ``{turn}``, replaced by the turn's number, so a
scripted model can give each turn its own script (``scripted:turn{turn}.json``):
the scripted model numbers its answers per task, and every turn is a new task.

The session a plain ``ratchet chat`` resumes is kept in the store itself, in
the session ``_ratchet_last_chat`` (``{"session": NAME}``); ids starting with
``_ratchet_`` are Ratchet's own and ``ratchet sessions`` leaves them out.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from ..errors import InputError, SessionNotFound
from ..model import Task
from ..providers import resolve_model
from ..store import StateStore
from .tasklist import tasks_of
from .turn import CHAT_TURN_WORKFLOW, DEFAULT_MAX_MODEL_CALLS

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..sessions import SessionHandle

__all__ = [
    "DEFAULT_SESSION",
    "INTERNAL_PREFIX",
    "LAST_CHAT_SESSION",
    "ChatClient",
    "last_chat",
    "model_for_turn",
    "remember_last_chat",
    "run_turn",
    "start_turn",
]

INTERNAL_PREFIX = "_ratchet_"
LAST_CHAT_SESSION = f"{INTERNAL_PREFIX}last_chat"
DEFAULT_SESSION = "chat"


async def remember_last_chat(store: StateStore, session_id: str) -> None:
    """Make `session_id` the session a plain ``ratchet chat`` on this store resumes."""
    await store.update_session_state(LAST_CHAT_SESSION, lambda state: {**state, "session": session_id})


async def last_chat(store: StateStore) -> str | None:
    """The session the last ``ratchet chat`` on this store used, or None."""
    try:
        found = (await store.get_session(LAST_CHAT_SESSION)).state.get("session")
    except SessionNotFound:
        return None
    return found if isinstance(found, str) and found else None


def model_for_turn(model: str, turn: int) -> str:
    """The model string of one turn: ``{turn}`` replaced by the turn's number."""
    return model.replace("{turn}", str(turn))


async def start_turn(store: StateStore, session_id: str, model: str) -> tuple[str, str]:
    """Count a new turn of the session; return the turn task's id and its model string.

    Raises:
        InputError: the model string names no usable model (for this turn).
    """
    if session_id.startswith(INTERNAL_PREFIX):
        raise InputError(f"session ids starting with {INTERNAL_PREFIX!r} are Ratchet's own; choose another")
    counted = await store.update_session_state(
        session_id, lambda state: {**state, "turns": int(state.get("turns") or 0) + 1}
    )
    turn = int(counted.state["turns"])  # type: ignore[arg-type]
    turn_model = model_for_turn(model, turn)
    resolve_model(turn_model)
    slug = re.sub(r"[^A-Za-z0-9_-]", "-", session_id)[:30].strip("-") or "session"
    return f"chat-{slug}-{turn}-{uuid.uuid4().hex[:6]}", turn_model


async def run_turn(
    runtime: Runtime,
    session_id: str,
    message: str,
    *,
    model: str,
    max_model_calls: int | None = None,
    task_id: str | None = None,
    turn_model: str | None = None,
) -> Task:
    """Run one turn as a durable task here, until it ends; return the task.

    Pass the `task_id` and `turn_model` from `start_turn` to know the task's
    id before it runs; without them a turn is counted here.
    """
    if task_id is None or turn_model is None:
        task_id, turn_model = await start_turn(runtime.store, session_id, model)
    inputs: dict[str, JsonValue] = {
        "session": session_id,
        "message": message,
        "max_model_calls": max_model_calls or DEFAULT_MAX_MODEL_CALLS,
    }
    return await runtime.run(
        CHAT_TURN_WORKFLOW,
        inputs,
        name=f"chat turn on {session_id}",
        instruction=message,
        model=turn_model,
        task_id=task_id,
    )


class ChatClient:
    """The task-list assistant on one session of a runtime's store.

    Args:
        runtime: the open `Runtime` that runs the turns and keeps the session.
        session_id: the session; a session that was never written starts empty.
    """

    def __init__(self, runtime: Runtime, session_id: str) -> None:
        self.runtime = runtime
        self.session: SessionHandle = runtime.session(session_id)

    def __repr__(self) -> str:
        return f"<ChatClient {self.session.id!r}>"

    async def tasks(self) -> list[dict[str, Any]]:
        """Return the task list kept in the session (empty if none)."""
        return tasks_of(await self.session.state())

    async def chat(self, message: str, *, model: str, max_model_calls: int | None = None) -> Task:
        """Run one turn on the session, as a durable task, until it ends.

        Returns the turn's task; its result holds the answer
        (``task.result["answer"]``) and the tool calls made.

        Raises:
            InputError: the model string names no usable model.
        """
        return await run_turn(
            self.runtime, self.session.id, message, model=model, max_model_calls=max_model_calls
        )

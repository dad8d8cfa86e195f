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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from ..agent.spec import tool_source
from ..engine.calls.compaction import DEFAULT_COMPACTION, compaction_reference
from ..errors import InputError, SessionNotFound, TaskNotFound
from ..providers import resolve_model
from ..records import Task
from ..store import StateStore
from ..tools import Tool
from . import tasklist
from .tasklist import tasks_of
from .tools import CHAT_TOOL_NAMES
from .turn import CHAT_TURN_WORKFLOW, DEFAULT_MAX_MODEL_CALLS

if TYPE_CHECKING:
    from ..runtime import Runtime
    from ..sessions import SessionHandle

__all__ = [
    "DEFAULT_SESSION",
    "INTERNAL_PREFIX",
    "LAST_CHAT_SESSION",
    "ChatClient",
    "ChatOptions",
    "forget_turns",
    "last_chat",
    "model_for_turn",
    "remember_last_chat",
    "run_turn",
    "start_turn",
    "unfinished_turns",
]

_DEFAULT: Any = object()  # no compaction given: the built-in one

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

    The turn's task id joins the session's unfinished turns (``unfinished``
    in its state) until the turn records its exchange, so a chat started
    again after a crash or a Ctrl-C finds it (`unfinished_turns`).

    Raises:
        InputError: the model string names no usable model (for this turn).
    """
    if session_id.startswith(INTERNAL_PREFIX):
        raise InputError(f"session ids starting with {INTERNAL_PREFIX!r} are Ratchet's own; choose another")
    slug = re.sub(r"[^A-Za-z0-9_-]", "-", session_id)[:30].strip("-") or "session"
    suffix = uuid.uuid4().hex[:6]

    def count(state: dict[str, Any]) -> dict[str, Any]:
        turn = int(state.get("turns") or 0) + 1
        task_id = f"chat-{slug}-{turn}-{suffix}"
        return {**state, "turns": turn, "unfinished": [*tasklist.unfinished_of(state), task_id]}

    turn = int((await store.update_session_state(session_id, count)).state["turns"])  # type: ignore[arg-type]
    turn_model = model_for_turn(model, turn)
    try:
        resolve_model(turn_model)
    except InputError:
        await forget_turns(store, session_id, [f"chat-{slug}-{turn}-{suffix}"])
        raise
    return f"chat-{slug}-{turn}-{suffix}", turn_model


async def forget_turns(store: StateStore, session_id: str, task_ids: list[str]) -> None:
    """Take turns off the session's unfinished ones (they ended, or never began)."""
    await store.update_session_state(
        session_id,
        lambda state: {
            **state,
            "unfinished": [t for t in tasklist.unfinished_of(state) if t not in task_ids],
        },
    )


async def unfinished_turns(store: StateStore, session_id: str) -> list[Task]:
    """The session's turns that began and have not ended (a crash or a Ctrl-C stopped them).

    Turns that ended since (another process resumed them) or whose task was
    never created are taken off the list.
    """
    try:
        listed = tasklist.unfinished_of((await store.get_session(session_id)).state)
    except SessionNotFound:
        return []
    found: list[Task] = []
    gone: list[str] = []
    for task_id in listed:
        try:
            task = await store.get_task(task_id)
        except TaskNotFound:
            gone.append(task_id)
            continue
        if task.status.is_terminal:
            gone.append(task_id)
        else:
            found.append(task)
    if gone:
        await forget_turns(store, session_id, gone)
    return found


async def run_turn(
    runtime: Runtime,
    session_id: str,
    message: str,
    *,
    model: str,
    max_model_calls: int | None = None,
    task_id: str | None = None,
    turn_model: str | None = None,
    options: ChatOptions | None = None,
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
        **(options or ChatOptions()).inputs(),
    }
    return await runtime.run(
        CHAT_TURN_WORKFLOW,
        inputs,
        name=f"chat turn on {session_id}",
        instruction=message,
        model=turn_model,
        task_id=task_id,
    )


@dataclass(frozen=True)
class ChatOptions:
    """What a chat's turns record besides the message: the user's tools, instructions, compaction.

    Attributes:
        tool_sources: modules or ``.py`` files whose every ``@ratchet.tool``
            the assistant also offers (a file under the project root is
            recorded relative to it).
        tool_names: offer only these of their tools (None: all).
        instructions: the user's instructions, added to the system prompt.
        compaction: as a task records it (`compaction_reference`): the
            built-in one by default, None for none.
    """

    tool_sources: tuple[str, ...] = ()
    tool_names: tuple[str, ...] | None = None
    instructions: str = ""
    compaction: JsonValue = DEFAULT_COMPACTION

    def inputs(self) -> dict[str, JsonValue]:
        """The turn task's inputs that record these options."""
        found: dict[str, JsonValue] = {"compaction": self.compaction}
        if self.tool_sources:
            found["tools"] = list(self.tool_sources)
        if self.tool_names is not None:
            found["tool_names"] = list(self.tool_names)
        if self.instructions:
            found["instructions"] = self.instructions
        return found


class ChatClient:
    """The task-list assistant on one session of a runtime's store.

    Args:
        runtime: the open `Runtime` that runs the turns and keeps the session.
        session_id: the session; a session that was never written starts empty.
        tools: the user's own `Tool` objects the assistant also offers; each
            must be a top-level name of a module or a project file.
        instructions: added to the assistant's system prompt.
        compaction: what shortens a turn's requests: the built-in
            `Compaction` by default, None for none, or your own object
            (see docs/agent.md, compaction).

    Raises:
        InputError: a tool is not at the top level of a module, or takes the
            name of one of the chat's own tools.
    """

    def __init__(
        self,
        runtime: Runtime,
        session_id: str,
        *,
        tools: Iterable[Tool] = (),
        instructions: str = "",
        compaction: Any = _DEFAULT,
    ) -> None:
        self.runtime = runtime
        self.session: SessionHandle = runtime.session(session_id)
        given = list(tools)
        taken = sorted(set(CHAT_TOOL_NAMES).intersection(t.name for t in given))
        if taken:
            raise InputError(
                f"tool name {taken[0]!r} is one of the chat's own tools; give the tool another name"
            )
        sources = tuple(dict.fromkeys(tool_source(t) for t in given))
        self.options = ChatOptions(
            tool_sources=sources,
            tool_names=tuple(t.name for t in given) if given else None,
            instructions=instructions,
            compaction=DEFAULT_COMPACTION if compaction is _DEFAULT else compaction_reference(compaction),
        )

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
            self.runtime,
            self.session.id,
            message,
            model=model,
            max_model_calls=max_model_calls,
            options=self.options,
        )

    async def unfinished(self) -> list[Task]:
        """The session's turns a crash or an interruption stopped before they ended."""
        return await unfinished_turns(self.runtime.store, self.session.id)

    async def finish(self, task_id: str) -> Task:
        """Finish a stopped turn here, from its journal (nothing it did runs again); return it.

        Raises:
            CannotResume: the turn waits on a person, or a live process holds it.
        """
        return await self.runtime.resume(task_id)

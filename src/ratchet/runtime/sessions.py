"""The `Runtime`'s sessions: a handle on one, and a durable chat turn with any agent on one.

`SessionMethods` is part of `Runtime`; it reaches the rest of the runtime
through `_Host`.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Protocol

from pydantic import JsonValue

from ..agent import Agent
from ..errors import InputError, TurnNotCompleted
from ..records import Task, TaskStatus
from ..sessions import SessionHandle
from ..store import StateStore

__all__ = ["SessionMethods", "on_session"]


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    async def run(
        self, workflow: Any, inputs: dict[str, JsonValue] | None = None, **options: Any
    ) -> Task: ...


def on_session(agent: Agent, session_id: str) -> Agent:
    """A copy of `agent` bound to the session `session_id` (the agent itself is left as it is).

    Raises:
        InputError: the session id is empty.
    """
    if not isinstance(session_id, str) or not session_id.strip():
        raise InputError("give a session id: a non-empty name, e.g. 'architect'")
    bound = copy.copy(agent)
    bound.spec = agent.spec.model_copy(update={"session": session_id})
    return bound


class SessionMethods:
    """``Runtime.session`` and ``Runtime.chat``."""

    def session(self: _Host, session_id: str) -> SessionHandle:
        """Return a handle on the session `session_id`: its state and changes to it."""
        return SessionHandle(self.store, session_id)

    async def chat(self: _Host, agent: Agent, session_id: str, text: str, **options: Any) -> str:
        """One durable turn with `agent` on the session `session_id`: run `text` as its task; its result.

        The turn is a task of the agent bound to the session (whatever session
        the agent names), run here until it ends: it plans and acts with the
        session's earlier exchanges in its prompts and records its own
        (docs/agent.md, "Agents with memory"). Takes `Runtime.submit`'s options.

        Returns:
            The task's result as text (a JSON result as its JSON text).

        Raises:
            TurnNotCompleted: the task failed, was cancelled or waits on a person
                (``error.task`` is the task; a waiting one finishes with `resume`).
            InputError: the session id is empty, or `agent` is not an `Agent`.
        """
        if not isinstance(agent, Agent):
            raise InputError(f"Runtime.chat takes an Agent, not {type(agent).__name__}")
        task = await self.run(on_session(agent, session_id), instruction=text, **options)
        if task.status is not TaskStatus.COMPLETED:
            raise TurnNotCompleted(task=task)
        result = task.result
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)

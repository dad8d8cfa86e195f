"""The sessions people list (`ratchet sessions`, ``GET /api/sessions``), summarised in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import Session
from ..store import StoreOps
from .client import INTERNAL_PREFIX
from .tasklist import tasks_of

__all__ = ["SessionSummary", "list_session_summaries", "summarize_session"]


@dataclass(frozen=True)
class SessionSummary:
    """A session as `ratchet sessions` lists it.

    Attributes:
        tasks: how many items its task list holds; None when it keeps none.
        turns: how many chat turns it had, as the session counts them.
    """

    session: Session
    tasks: int | None
    turns: Any


def summarize_session(session: Session) -> SessionSummary:
    """A session with the size of its task list and its count of turns."""
    tasks = session.state.get("tasks")
    count = len(tasks_of(session.state)) if isinstance(tasks, list) else None
    return SessionSummary(session=session, tasks=count, turns=session.state.get("turns"))


async def list_session_summaries(store: StoreOps) -> list[SessionSummary]:
    """The sessions people made, most recently updated first (Ratchet's own are left out)."""
    found = await store.list_sessions()
    return [summarize_session(s) for s in found if not s.id.startswith(INTERNAL_PREFIX)]

"""Sessions for Python programs: ``Runtime.session(id)`` returns a `SessionHandle`.

A session is a long-lived conversation with a persistent ``session_state``
(a JSON object). Every change goes through `StateStore.update_session_state`,
which re-reads and re-applies the change when another writer got in first
(optimistic concurrency), so two writers at once never lose either's change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import SessionNotFound
from .model import Session
from .store import StateStore

__all__ = ["SessionHandle"]

StateChange = Callable[[dict[str, Any]], dict[str, Any]]


class SessionHandle:
    """One session of a store; cheap to make, holds no connection of its own.

    Args:
        store: the open store that keeps the session.
        session_id: the session's id; a session that was never written reads as empty.
    """

    def __init__(self, store: StateStore, session_id: str) -> None:
        self._store = store
        self.id = session_id

    def __repr__(self) -> str:
        return f"<SessionHandle {self.id!r}>"

    async def record(self) -> Session | None:
        """Return the stored session (state, version, times), or None if it was never written."""
        try:
            return await self._store.get_session(self.id)
        except SessionNotFound:
            return None

    async def state(self) -> dict[str, Any]:
        """Return the session's state (empty for a session never written)."""
        found = await self.record()
        return {} if found is None else dict(found.state)

    async def update(self, change: StateChange) -> dict[str, Any]:
        """Apply ``change(state) -> new state`` and return the new state.

        `change` gets a copy of the current state; it may run more than once
        (again on a fresh copy when another writer got in first), so it must
        have no effect besides returning the new state.

        Raises:
            ConflictError: the session kept changing under it (after many tries).
        """
        return dict((await self._store.update_session_state(self.id, change)).state)

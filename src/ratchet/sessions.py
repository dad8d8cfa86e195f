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
from .records import Session
from .store import StateStore

__all__ = ["APPLIED_KEY", "CallSession", "SessionHandle"]

StateChange = Callable[[dict[str, Any]], dict[str, Any]]

APPLIED_KEY = "_ratchet_applied"
"""Where a session's state keeps the keys of the tool calls' changes already applied."""
MAX_APPLIED = 200


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


class CallSession:
    """The session a task is bound to, as one tool call reaches it (``ctx.session``).

    ``state`` is the session's state as the call started (`load` reads it
    before the tool runs). ``update`` applies a change once per call: the
    change's key (the call's idempotency key and the change's number within
    the call) is kept in the state, so a call run again after a crash applies
    none of the changes it made before, and returns the state as it stands.

    Args:
        store: the open store that keeps the session.
        session_id: the session's id.
        key: the call's idempotency key.
    """

    def __init__(self, store: StateStore, session_id: str, key: str) -> None:
        self._store = store
        self.id = session_id
        self._key = key
        self._updates = 0
        self.state: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<CallSession {self.id!r}>"

    async def load(self) -> dict[str, Any]:
        """Read the session's state (empty for a session never written) into ``state``; return it."""
        try:
            found = dict((await self._store.get_session(self.id)).state)
        except SessionNotFound:
            found = {}
        self.state = _visible(found)
        return self.state

    async def update(self, change: StateChange) -> dict[str, Any]:
        """Apply ``change(state) -> new state`` once for this call; return the new state.

        `change` gets a copy of the current state and may run more than once
        (again when another writer got in first): it must only return the
        new state.

        Raises:
            ConflictError: the session kept changing under it (after many tries).
        """
        self._updates += 1
        key = f"{self._key}/{self._updates}"

        def once(state: dict[str, Any]) -> dict[str, Any]:
            applied = [str(k) for k in state.get(APPLIED_KEY) or []]
            if key in applied:
                return state
            changed = dict(change(_visible(state)))
            changed[APPLIED_KEY] = [*applied, key][-MAX_APPLIED:]
            return changed

        self.state = _visible(dict((await self._store.update_session_state(self.id, once)).state))
        return self.state


def _visible(state: dict[str, Any]) -> dict[str, Any]:
    """The state as a tool sees it: without Ratchet's own bookkeeping."""
    return {key: value for key, value in state.items() if key != APPLIED_KEY}

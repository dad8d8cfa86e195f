"""Sessions: persistent state under optimistic concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ratchet.errors import ConflictError, SessionNotFound
from ratchet.records import utcnow
from ratchet.store import StateStore

from ..helpers.builders import make_session


async def test_get_unknown_session_raises(store: StateStore) -> None:
    with pytest.raises(SessionNotFound) as caught:
        await store.get_session("nope")
    assert caught.value.session_id == "nope"


async def test_new_session_is_stored_at_version_one(store: StateStore) -> None:
    stored = await store.put_session(make_session("s1"))
    assert stored.version == 1
    assert stored.state == {"topic": "weather"}
    assert await store.get_session("s1") == stored


async def test_each_write_bumps_the_version(store: StateStore) -> None:
    first = await store.put_session(make_session("s1"))
    second = await store.put_session(first.model_copy(update={"state": {"topic": "rain"}}))
    assert second.version == 2
    assert await store.get_session("s1") == second


async def test_stale_version_raises_conflict(store: StateStore) -> None:
    first = await store.put_session(make_session("s1"))
    current = await store.put_session(first.model_copy(update={"state": {"n": 1}}))
    with pytest.raises(ConflictError):
        await store.put_session(first.model_copy(update={"state": {"n": "stale"}}))
    with pytest.raises(ConflictError):
        await store.put_session(make_session("s1", state={"n": "new again"}))
    assert await store.get_session("s1") == current


async def test_new_session_with_a_version_raises_conflict(store: StateStore) -> None:
    with pytest.raises(ConflictError):
        await store.put_session(make_session("s1", version=3))
    with pytest.raises(SessionNotFound):
        await store.get_session("s1")


async def test_list_sessions_most_recently_updated_first(store: StateStore) -> None:
    async def write(session_id: str) -> None:
        try:
            current = await store.get_session(session_id)
        except SessionNotFound:
            current = make_session(session_id)
        await store.put_session(current.model_copy(update={"updated_at": utcnow()}))
        # distinct update times, whether the store or the caller sets them
        await asyncio.sleep(0.005)

    for session_id in ["a", "b", "c", "a"]:
        await write(session_id)
    assert [s.id for s in await store.list_sessions()] == ["a", "c", "b"]


async def test_list_sessions_empty(store: StateStore) -> None:
    assert await store.list_sessions() == []


async def test_update_session_state_creates_and_changes(store: StateStore) -> None:
    created = await store.update_session_state("s1", lambda state: {**state, "n": 1})
    assert (created.state, created.version) == ({"n": 1}, 1)
    changed = await store.update_session_state("s1", lambda state: {**state, "m": 2})
    assert (changed.state, changed.version) == ({"n": 1, "m": 2}, 2)
    assert await store.get_session("s1") == changed


async def test_concurrent_state_updates_lose_nothing(store: StateStore) -> None:
    writers = 20

    def add(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def change(state: dict[str, Any]) -> dict[str, Any]:
            state[key] = True
            return state

        return change

    await asyncio.gather(*(store.update_session_state("s1", add(f"k{i}")) for i in range(writers)))
    stored = await store.get_session("s1")
    assert stored.state == {f"k{i}": True for i in range(writers)}
    assert stored.version == writers

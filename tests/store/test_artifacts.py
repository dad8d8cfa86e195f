"""Artifacts: a record plus a body read in slices."""

from __future__ import annotations

import pytest

from ratchet.errors import ArtifactNotFound, DuplicateRecord
from ratchet.records import Task
from ratchet.store import StateStore

from ..helpers.builders import at, make_artifact, make_task

BODY = b"hello, world"


async def test_put_sets_bytes_to_the_body_length(store: StateStore, task: Task) -> None:
    stored = await store.put_artifact(make_artifact("a1", task.id, bytes=999), BODY)
    assert stored.bytes == len(BODY)
    assert await store.get_artifact("a1") == stored
    assert stored == make_artifact("a1", task.id, bytes=len(BODY), created_at=stored.created_at)


async def test_an_artifact_keeps_the_step_that_made_it(store: StateStore, task: Task) -> None:
    made = await store.put_artifact(make_artifact("a1", task.id, step=2), BODY)
    loose = await store.put_artifact(make_artifact("a2", task.id), BODY)
    assert (await store.get_artifact("a1")).step == made.step == made.ref.step == 2
    assert [a.step for a in await store.list_artifacts(task.id)] == [2, None] == [made.step, loose.step]


async def test_read_returns_the_body_or_a_slice(store: StateStore, task: Task) -> None:
    await store.put_artifact(make_artifact("a1", task.id), BODY)
    assert await store.read_artifact("a1") == BODY
    assert await store.read_artifact("a1", offset=7) == b"world"
    assert await store.read_artifact("a1", length=5) == b"hello"
    assert await store.read_artifact("a1", offset=5, length=2) == b", "
    assert await store.read_artifact("a1", offset=7, length=100) == b"world"
    assert await store.read_artifact("a1", offset=len(BODY)) == b""


async def test_binary_and_empty_bodies_round_trip(store: StateStore, task: Task) -> None:
    binary = bytes(range(256)) * 4
    await store.put_artifact(make_artifact("bin", task.id), binary)
    empty = await store.put_artifact(make_artifact("empty", task.id), b"")
    assert await store.read_artifact("bin") == binary
    assert await store.read_artifact("bin", offset=255, length=2) == b"\xff\x00"
    assert (empty.bytes, await store.read_artifact("empty")) == (0, b"")


async def test_put_with_an_existing_id_raises_duplicate(store: StateStore, task: Task) -> None:
    await store.put_artifact(make_artifact("a1", task.id), BODY)
    with pytest.raises(DuplicateRecord):
        await store.put_artifact(make_artifact("a1", task.id, summary="other"), b"other")
    assert await store.read_artifact("a1") == BODY
    assert (await store.get_artifact("a1")).summary == "summary of a1"


async def test_unknown_artifact_raises_not_found(store: StateStore) -> None:
    with pytest.raises(ArtifactNotFound):
        await store.get_artifact("nope")
    with pytest.raises(ArtifactNotFound) as caught:
        await store.read_artifact("nope")
    assert caught.value.artifact_id == "nope"


async def test_list_artifacts_of_a_task_oldest_first(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    await store.put_artifact(make_artifact("late", task.id, created_at=at(2)), b"2")
    await store.put_artifact(make_artifact("theirs", other.id, created_at=at(0)), b"x")
    await store.put_artifact(make_artifact("early", task.id, created_at=at(1)), b"1")
    assert [a.id for a in await store.list_artifacts(task.id)] == ["early", "late"]
    assert [a.id for a in await store.list_artifacts(other.id)] == ["theirs"]
    assert await store.list_artifacts("ghost") == []

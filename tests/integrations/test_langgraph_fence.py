"""RatchetSaver(fence=True): one writer per thread at a time, so a thread's checkpoints never fork."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from ratchet.errors import ConflictError, LeaseLost
from ratchet.integrations.langgraph import RatchetSaver
from ratchet.store import StateStore


def config(thread_id: str, checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def put(saver: RatchetSaver, thread_id: str, text: str) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": text}
    checkpoint["channel_versions"] = {"note": 1}
    return await saver.aput(config(thread_id), checkpoint, {"source": "loop", "step": 1}, {"note": 1})


async def notes(saver: RatchetSaver, thread_id: str) -> list[str]:
    return [found.checkpoint["channel_values"]["note"] async for found in saver.alist(config(thread_id))]


async def test_a_second_writer_on_a_thread_is_refused_in_one_line_until_the_first_releases(
    store: StateStore,
) -> None:
    first, second = RatchetSaver(store, fence=True), RatchetSaver(store, fence=True)
    stored = await put(first, "t1", "first's")

    with pytest.raises(ConflictError) as refused:
        await put(second, "t1", "second's")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("thread 't1' is being written by langgraph-saver-")
    assert "fence=True" in message
    with pytest.raises(ConflictError):
        await second.aput_writes(stored, [("note", "a write")], "task-1")
    assert await notes(first, "t1") == ["first's"]
    found = await first.aget_tuple(stored)
    assert found is not None and found.pending_writes == []

    await put(second, "t2", "another thread")  # other threads are free
    await put(first, "t1", "first's again")  # the holder goes on writing

    await first.arelease()
    await put(second, "t1", "second's")
    assert sorted(await notes(second, "t1")) == ["first's", "first's again", "second's"]


async def test_a_writer_whose_lease_expired_and_was_taken_loses_its_next_write(store: StateStore) -> None:
    stale = RatchetSaver(store, fence=True, fence_ttl=0.3)
    await put(stale, "t1", "before the pause")
    await asyncio.sleep(0.4)  # the writer pauses past its lease; another takes the thread
    taker = RatchetSaver(store, fence=True)
    await put(taker, "t1", "the taker's")

    with pytest.raises(LeaseLost):
        await put(stale, "t1", "after the pause")
    assert sorted(await notes(taker, "t1")) == ["before the pause", "the taker's"]


async def test_savers_without_a_fence_both_write_as_langgraph_savers_do(store: StateStore) -> None:
    first, second = RatchetSaver(store), RatchetSaver(store)
    await put(first, "t1", "one")
    await put(second, "t1", "two")
    assert sorted(await notes(first, "t1")) == ["one", "two"]


def test_a_saver_opened_with_with_releases_its_leases_on_exit(url: str) -> None:
    with RatchetSaver.from_conn_string(url, fence=True) as saver:
        asyncio.run(put(saver, "t1", "one"))
    with RatchetSaver.from_conn_string(url, fence=True) as saver:
        asyncio.run(put(saver, "t1", "two"))
        assert sorted(found.checkpoint["channel_values"]["note"] for found in saver.list(config("t1"))) == [
            "one",
            "two",
        ]

"""`Runtime.stream`: a task's stream entry by entry, from an offset on, followed until the task ends."""

from __future__ import annotations

import asyncio

import pytest

from ratchet.errors import InputError, TaskNotFound
from ratchet.records import StreamEntry, StreamKind, Task, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from ..helpers.builders import make_task


def _pieces(task_id: str, *texts: str) -> list[StreamEntry]:
    return [StreamEntry(task_id=task_id, kind=StreamKind.TEXT, seq=1, attempt=1, value=t) for t in texts]


async def _task(store: StateStore) -> Task:
    return await store.create_task(make_task("t-stream"))


async def test_a_stored_stream_is_read_from_an_offset_on(store: StateStore) -> None:
    task = await _task(store)
    await store.append_stream(task.id, _pieces(task.id, "a", "b", "c", "d"))
    rt = Runtime(store)

    whole = [e.value async for e in rt.stream(task.id, follow=False)]
    rest = [(e.offset, e.value) async for e in rt.stream(task.id, from_offset=2, follow=False)]

    assert whole == ["a", "b", "c", "d"]
    assert rest == [(2, "c"), (3, "d")]


async def test_a_followed_stream_gives_entries_as_written_and_ends_with_its_task(store: StateStore) -> None:
    task = await _task(store)
    rt = Runtime(store)

    async def write() -> None:
        for text in ["Hel", "lo", "!"]:
            await store.append_stream(task.id, _pieces(task.id, text))
            await asyncio.sleep(0.05)
        running = await store.update_task(task.transition(TaskStatus.RUNNING))
        await store.update_task(running.transition(TaskStatus.COMPLETED))

    writer = asyncio.create_task(write())
    read = [e.value async for e in rt.stream(task.id)]
    await writer

    assert read == ["Hel", "lo", "!"]


async def test_a_reader_that_comes_back_with_its_last_offset_misses_nothing_and_repeats_nothing(
    store: StateStore,
) -> None:
    task = await _task(store)
    rt = Runtime(store)
    await store.append_stream(task.id, _pieces(task.id, *"abc"))
    first = [e async for e in rt.stream(task.id, follow=False)]
    await store.append_stream(task.id, _pieces(task.id, *"de"))

    again = [e async for e in rt.stream(task.id, from_offset=first[-1].offset + 1, follow=False)]

    assert [e.value for e in [*first, *again]] == list("abcde")


async def test_a_stream_of_no_task_or_from_a_bad_offset_is_refused(store: StateStore) -> None:
    task = await _task(store)
    rt = Runtime(store)
    with pytest.raises(TaskNotFound):
        [e async for e in rt.stream("nobody")]
    with pytest.raises(InputError, match="whole number, 0 or more"):
        [e async for e in rt.stream(task.id, from_offset=-1)]

"""`SyncRuntime.stream`: a task's stream as a plain iterator, followed while another thread writes it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ratchet import SyncRuntime
from ratchet.errors import InputError, TaskNotFound
from ratchet.records import StreamEntry
from ratchet.store import open_store

from ..helpers.stream_entries import finish_task, new_task, start_task, story


def _writer(
    url: str, task_id: str, batches: list[list[StreamEntry]], go: threading.Event
) -> threading.Thread:
    """A thread that, once `go` is set, appends each batch a moment apart, then ends the task."""

    async def write() -> None:
        store = await open_store(url)
        try:
            for batch in batches:
                await store.append_stream(task_id, batch)
                await asyncio.sleep(0.02)
            await finish_task(store, task_id)
        finally:
            await store.close()

    def run() -> None:
        go.wait()
        asyncio.run(write())

    thread = threading.Thread(target=run, name="stream writer")
    thread.start()
    return thread


def test_it_follows_a_stream_being_written_and_a_reader_that_comes_back_misses_nothing(url: str) -> None:
    task_id = asyncio.run(_made(url))
    batches = story(task_id)
    with SyncRuntime(url) as rt:
        go = threading.Event()
        writer = _writer(url, task_id, batches[1:], go)
        first: list[StreamEntry] = []
        for entry in rt.stream(task_id):
            first.append(entry)
            go.set()  # the writing starts once the reader follows
            if len(first) == 4:
                break  # the reader goes away mid-answer
        rest = list(rt.stream(task_id, from_offset=first[-1].offset + 1))  # ends with the task
        writer.join()

    every = [entry for batch in batches for entry in batch]
    got = first + rest
    assert [e.offset for e in got] == list(range(len(every)))
    assert [(e.kind, e.seq, e.attempt, e.value) for e in got] == [
        (e.kind, e.seq, e.attempt, e.value) for e in every
    ]


async def _made(url: str) -> str:
    store = await open_store(url)
    try:
        task_id = await new_task(store)
        await start_task(store, task_id)
        await store.append_stream(task_id, story(task_id)[0])  # something to read at once
        return task_id
    finally:
        await store.close()


def test_a_stream_of_no_task_or_from_a_bad_offset_is_refused(url: str) -> None:
    task_id = asyncio.run(_made(url))
    with SyncRuntime(url) as rt:
        with pytest.raises(TaskNotFound):
            list(rt.stream("nobody"))
        with pytest.raises(InputError, match="whole number, 0 or more"):
            list(rt.stream(task_id, from_offset=-1))
        assert [e.offset for e in rt.stream(task_id, follow=False)] == [0, 1]

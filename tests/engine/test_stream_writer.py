"""`StreamWriter`: a run's stream entries appended in batches, by size and by age, fenced by its lease."""

from __future__ import annotations

import asyncio

from ratchet.engine.streams import StreamWriter
from ratchet.records import Lease, StreamKind, Task
from ratchet.store import StateStore

from ..helpers.builders import make_task
from ..helpers.disk import SmallDisk
from ..helpers.stores import opened


async def _leased(store: StateStore, task_id: str = "t-writer") -> tuple[Task, Lease]:
    task = await store.create_task(make_task(task_id))
    lease = await store.claim_lease(task.id, "worker-1", 30.0)
    assert lease is not None
    return task, lease


async def test_many_pieces_take_few_appends_each_a_batch_of_about_the_size_set(store: StateStore) -> None:
    task, lease = await _leased(store)
    writer = StreamWriter(store, task.id, lease, max_bytes=1000, max_age=60.0)
    pieces = [f"{i:04d}-piece " for i in range(500)]  # 11 characters each: 5,500 in all

    async def answer(on_text: object) -> str:
        assert callable(on_text)
        for piece in pieces:
            await on_text(piece)
        return "".join(pieces)

    assert await writer.attempt(0, 1, answer) == "".join(pieces)

    entries = await store.read_stream(task.id)
    assert [e.value for e in entries if e.kind is StreamKind.TEXT] == pieces
    assert [e.kind for e in entries][::501] == [StreamKind.ATTEMPT, StreamKind.END]
    # 502 entries in 6 appends: five as the buffer passed 1,000 characters, the last (the rest and the
    # end mark) before the attempt returned.
    assert writer.appends == 6


async def test_a_piece_is_appended_once_it_is_old_enough_though_the_attempt_goes_on(
    store: StateStore,
) -> None:
    task, lease = await _leased(store)
    writer = StreamWriter(store, task.id, lease, max_bytes=1_000_000, max_age=0.01)
    seen = asyncio.Event()

    async def answer(on_text: object) -> str:
        assert callable(on_text)
        await on_text("first")
        while not [e for e in await store.read_stream(task.id) if e.kind is StreamKind.TEXT]:
            await asyncio.sleep(0.01)
        seen.set()
        await on_text(" second")
        return "first second"

    await writer.attempt(3, 2, answer)

    assert seen.is_set()
    entries = await store.read_stream(task.id)
    assert [(e.kind, e.value) for e in entries] == [
        (StreamKind.ATTEMPT, {}),
        (StreamKind.TEXT, "first"),
        (StreamKind.TEXT, " second"),
        (StreamKind.END, {"outcome": "succeeded"}),
    ]
    assert {(e.seq, e.attempt) for e in entries} == {(3, 2)}


async def test_a_writer_whose_lease_was_taken_over_writes_nothing_more(store: StateStore) -> None:
    task, lease = await _leased(store)
    writer = StreamWriter(store, task.id, lease, max_bytes=1_000_000, max_age=60.0)
    taken = await store.claim_lease(task.id, "worker-2", 30.0, take_over=True)
    assert taken is not None

    async def answer(on_text: object) -> str:
        assert callable(on_text)
        await on_text("too late")
        return "too late"

    assert await writer.attempt(0, 1, answer) == "too late"  # the call's outcome is not the stream's
    await writer.close()

    assert await store.read_stream(task.id) == []


async def test_a_value_is_written_once_per_seq_even_by_a_writer_of_a_later_run(store: StateStore) -> None:
    task, lease = await _leased(store)
    first = StreamWriter(store, task.id, lease)
    assert await first.write_value(4, "progress", {"done": 1})
    await store.release_lease(lease)
    again = await store.claim_lease(task.id, "worker-2", 30.0)
    assert again is not None

    later = StreamWriter(store, task.id, again)
    assert not await later.write_value(4, "progress", {"done": 1})
    assert await later.write_value(5, "progress", {"done": 2})

    entries = await store.read_stream(task.id)
    assert [(e.seq, e.key, e.value) for e in entries] == [
        (4, "progress", {"done": 1}),
        (5, "progress", {"done": 2}),
    ]
    assert later.appends == 1  # the replayed one cost no write


async def test_a_batch_the_store_refuses_is_dropped_and_the_next_mark_says_how_many_entries_were_lost(
    small_disk: SmallDisk,
) -> None:
    async with opened(f"sqlite:///{small_disk.directory / 'ratchet.db'}") as store:
        task, lease = await _leased(store)
        writer = StreamWriter(store, task.id, lease, max_bytes=1_000_000, max_age=60.0)

        async def answer(on_text: object) -> str:
            assert callable(on_text)
            await on_text("lost ")
            small_disk.fill()
            await writer.flush()  # the attempt mark and "lost ": the disk is full
            small_disk.free()
            await on_text("kept")
            return "lost kept"

        assert await writer.attempt(0, 1, answer) == "lost kept"  # the call does not fail

        entries = await store.read_stream(task.id)
    assert [(e.kind, e.value) for e in entries] == [
        (StreamKind.TEXT, "kept"),
        (StreamKind.END, {"outcome": "succeeded", "dropped": 2}),
    ]

"""Tasks' streams: entries numbered per task from 0, read from an offset, a workflow's values written once."""

from __future__ import annotations

import pytest

from ratchet.errors import InputError, TaskNotFound
from ratchet.records import StreamEntry, StreamKind, Task, TaskStatus
from ratchet.store import StateStore
from ratchet.store.changes import stream_topic


def _text(task_id: str, text: str, seq: int = 3, attempt: int = 1) -> StreamEntry:
    return StreamEntry(task_id=task_id, kind=StreamKind.TEXT, seq=seq, attempt=attempt, value=text)


def _value(task_id: str, seq: int, key: str, value: object) -> StreamEntry:
    return StreamEntry.model_validate(
        {"task_id": task_id, "kind": "value", "seq": seq, "key": key, "value": value}
    )


async def test_entries_are_numbered_per_task_from_zero_in_order(store: StateStore, task: Task) -> None:
    first = await store.append_stream(task.id, [_text(task.id, "Hel"), _text(task.id, "lo")])
    second = await store.append_stream(task.id, [_text(task.id, ", world")])

    assert [(e.offset, e.value) for e in [*first, *second]] == [(0, "Hel"), (1, "lo"), (2, ", world")]
    assert await store.read_stream(task.id) == [*first, *second]


async def test_a_read_starts_at_its_offset_and_takes_at_most_its_limit(store: StateStore, task: Task) -> None:
    await store.append_stream(task.id, [_text(task.id, str(n)) for n in range(10)])

    assert [e.value for e in await store.read_stream(task.id, from_offset=7)] == ["7", "8", "9"]
    assert [e.offset for e in await store.read_stream(task.id, from_offset=2, limit=3)] == [2, 3, 4]
    assert await store.read_stream(task.id, from_offset=10) == []
    assert await store.read_stream("nobody") == []


async def test_a_value_is_written_once_per_seq(store: StateStore, task: Task) -> None:
    written = await store.append_stream(task.id, [_value(task.id, 4, "progress", 1)])
    again = await store.append_stream(
        task.id,
        [_value(task.id, 4, "progress", 1), _value(task.id, 6, "progress", 2), _value(task.id, 6, "x", 3)],
    )

    assert [(e.offset, e.seq, e.value) for e in again] == [(0, 4, 1), (1, 6, 2), (1, 6, 2)]
    assert written[0] == again[0]
    assert [(e.offset, e.key, e.value) for e in await store.read_stream(task.id)] == [
        (0, "progress", 1),
        (1, "progress", 2),
    ]


async def test_an_append_rolled_back_leaves_no_entry_and_no_gap(store: StateStore, task: Task) -> None:
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.append_stream(task.id, [_text(task.id, "lost")])
            raise RuntimeError("the journal write failed")
    kept = await store.append_stream(task.id, [_text(task.id, "kept")])

    assert [(e.offset, e.value) for e in await store.read_stream(task.id)] == [(0, "kept")]
    assert kept[0].offset == 0


async def test_bad_entries_are_refused_and_nothing_is_written(store: StateStore, task: Task) -> None:
    with pytest.raises(TaskNotFound):
        await store.append_stream("nobody", [_text("nobody", "x")])
    with pytest.raises(InputError, match="cannot go in"):
        await store.append_stream(task.id, [_text(task.id, "mine"), _text("other", "theirs")])
    with pytest.raises(InputError, match="needs the seq"):
        await store.append_stream(task.id, [StreamEntry(task_id=task.id, kind=StreamKind.VALUE, value=1)])

    assert await store.read_stream(task.id) == []


async def test_an_append_wakes_the_streams_feed(store: StateStore, task: Task) -> None:
    async with store.changes(stream_topic(task.id)) as feed:
        await store.append_stream(task.id, [_text(task.id, "x")])
        assert await feed.wait(5.0)


async def test_deleting_a_task_deletes_its_stream(store: StateStore, task: Task) -> None:
    await store.append_stream(task.id, [_text(task.id, "x")])
    running = await store.update_task(task.transition(TaskStatus.RUNNING))
    await store.update_task(running.transition(TaskStatus.COMPLETED))

    await store.delete_task(task.id)

    assert await store.read_stream(task.id) == []


async def test_a_task_that_ends_wakes_its_streams_feed(store: StateStore, task: Task) -> None:
    running = await store.update_task(task.transition(TaskStatus.RUNNING))
    async with store.changes(stream_topic(task.id)) as feed:
        await store.update_task(running.transition(TaskStatus.COMPLETED))
        # SQLite's feeds also end a wait after each poll: the wait must say a change came.
        assert await feed.wait(5.0)

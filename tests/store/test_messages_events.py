"""Message threads and task events: append-only, numbered by the store."""

from __future__ import annotations

from ratchet.records import Severity, Task
from ratchet.store import StateStore

from ..helpers.builders import make_event, make_message, make_task

# ------------------------------------------------------------------ messages


async def test_messages_get_per_thread_seq_from_zero(store: StateStore, task: Task) -> None:
    appended = await store.append_messages(
        [
            make_message(task.id, "hello"),
            make_message("session-1", "hi"),
            make_message(task.id, "world", role="assistant"),
        ]
    )
    numbered = [(m.thread_id, m.seq) for m in appended]
    assert numbered == [(task.id, 0), ("session-1", 0), (task.id, 1)]
    more = await store.append_messages([make_message(task.id, "again")])
    assert [m.seq for m in more] == [2]
    assert [m.content for m in await store.list_messages(task.id)] == ["hello", "world", "again"]


async def test_appended_messages_are_stored_as_returned(store: StateStore, task: Task) -> None:
    tool_call = {"id": "c1", "name": "lookup", "arguments": {"q": "x"}}
    appended = await store.append_messages(
        [
            make_message(task.id, "use the tool", role="assistant", tool_calls=[tool_call]),
            make_message(task.id, {"answer": 42}, role="tool", tool_call_id="c1", name="lookup"),
        ]
    )
    assert await store.list_messages(task.id) == appended


async def test_list_messages_range_is_start_inclusive_end_exclusive(store: StateStore, task: Task) -> None:
    await store.append_messages([make_message(task.id, f"m{i}") for i in range(5)])

    async def seqs(**bounds: int) -> list[int]:
        return [m.seq for m in await store.list_messages(task.id, **bounds)]

    assert await seqs() == [0, 1, 2, 3, 4]
    assert await seqs(start=2) == [2, 3, 4]
    assert await seqs(end=2) == [0, 1]
    assert await seqs(start=1, end=3) == [1, 2]
    assert await seqs(start=5) == []


async def test_list_messages_of_unknown_thread_is_empty(store: StateStore) -> None:
    assert await store.list_messages("nobody") == []


async def test_appending_nothing_appends_nothing(store: StateStore, task: Task) -> None:
    assert await store.append_messages([]) == []
    assert await store.list_messages(task.id) == []


# ------------------------------------------------------------------ events


async def test_events_get_per_task_seq_from_one(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    first = await store.append_event(make_event(task.id, "a"))
    await store.append_event(make_event(other.id, "x"))
    second = await store.append_event(make_event(task.id, "b"))
    assert (first.seq, second.seq) == (1, 2)
    assert [e.seq for e in await store.list_events(other.id)] == [1]


async def test_appended_event_is_stored_as_returned(store: StateStore, task: Task) -> None:
    event = make_event(
        task.id,
        "step 1 failed",
        severity=Severity.ERROR,
        display_message="Step 1 failed: timeout",
        data={"step": 1, "why": ["timeout", None]},
    )
    stored = await store.append_event(event)
    assert stored == event.model_copy(update={"seq": 1})
    assert await store.list_events(task.id) == [stored]


async def test_list_events_after_seq_and_limit(store: StateStore, task: Task) -> None:
    for i in range(6):
        await store.append_event(make_event(task.id, f"e{i}"))

    async def seqs(*, after_seq: int = 0, limit: int | None = None) -> list[int]:
        return [e.seq for e in await store.list_events(task.id, after_seq=after_seq, limit=limit)]

    assert await seqs() == [1, 2, 3, 4, 5, 6]
    assert await seqs(after_seq=4) == [5, 6]
    assert await seqs(limit=2) == [1, 2]
    assert await seqs(after_seq=2, limit=3) == [3, 4, 5]
    assert await seqs(after_seq=6) == []


async def test_list_events_of_some_kinds_pages_among_those_kinds(store: StateStore, task: Task) -> None:
    for i, kind in enumerate(["step", "retry", "step", "resolved", "retry", "step", "in_doubt_rerun"]):
        await store.append_event(make_event(task.id, f"e{i}", kind=kind))

    async def seqs(kinds: set[str], *, after_seq: int = 0, limit: int | None = None) -> list[int]:
        found = await store.list_events(task.id, after_seq=after_seq, limit=limit, kinds=kinds)
        return [e.seq for e in found]

    assert await seqs({"retry"}) == [2, 5]
    assert await seqs({"retry", "resolved", "in_doubt_rerun"}) == [2, 4, 5, 7]
    assert await seqs({"retry", "resolved", "in_doubt_rerun"}, limit=2) == [2, 4]  # the limit counts matches
    assert await seqs({"retry", "resolved", "in_doubt_rerun"}, after_seq=4, limit=5) == [5, 7]
    assert await seqs({"no such kind"}) == []
    assert await seqs(set()) == []
    assert [e.kind for e in await store.list_events(task.id, kinds={"resolved"})] == ["resolved"]


async def test_last_events_are_the_newest_oldest_first(store: StateStore, task: Task) -> None:
    for i in range(5):
        await store.append_event(make_event(task.id, f"e{i}"))
    assert [e.message for e in await store.last_events(task.id, 2)] == ["e3", "e4"]
    assert [e.seq for e in await store.last_events(task.id, 10)] == [1, 2, 3, 4, 5]
    assert await store.last_events(task.id, 0) == []


async def test_events_of_unknown_task_are_empty(store: StateStore) -> None:
    assert await store.list_events("ghost") == []
    assert await store.last_events("ghost", 3) == []


async def test_a_tasks_events_are_counted(store: StateStore, task: Task) -> None:
    other = await store.create_task(make_task("t2"))
    for i in range(3):
        await store.append_event(make_event(task.id, f"e{i}"))
    await store.append_event(make_event(other.id, "elsewhere"))

    assert (await store.count_events(task.id), await store.count_events(other.id)) == (3, 1)
    assert await store.count_events("nobody") == 0
